package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The checks of compile.go follow kubernetes
// pkg/apis/admissionregistration/validation/validation.go
// (validateValidatingAdmissionPolicySpec, validateVariable,
// validateValidation, validateAuditAnnotation, validateMatchConditions,
// validateValidatingAdmissionPolicyBindingSpec, validateParamRef,
// validateValidationActions). The cases below are that package's own, from
// validation_test.go (TestValidateValidatingAdmissionPolicy and
// TestValidateValidatingAdmissionPolicyBinding), each with its name there,
// written as the v1 objects the harness reads and asked through the compile
// op. Upstream's cases of the checks this program does not copy (metadata,
// paramKind, match rules, audit annotation keys) are left out; its expected
// texts are substrings of the errors, as there.

// compileErrors compiles object as the compile op does, for the default
// compatibility version, and joins its errors as field.ErrorList's
// aggregate does.
func compileErrors(t *testing.T, object string) string {
	t.Helper()
	answer, err := newServer().compile(&compileRequest{Policy: json.RawMessage(object), Versions: []string{"1.36"}, CRDs: []json.RawMessage{}})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return strings.Join(answer.Errors["1.36"], ", ")
}

func vap(spec string) string {
	return `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "config"}, "spec": ` + spec + `}`
}

func binding(spec string) string {
	return `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "config"}, "spec": ` + spec + `}`
}

// upstreamCase is one case of upstream's table: the object, and the texts
// its errors must contain (none: no error at all).
type upstreamCase struct {
	name   string
	object string
	want   []string
}

func checkCases(t *testing.T, cases []upstreamCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := compileErrors(t, tc.object)
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("want no error, got %s", got)
			}
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("want an error containing\n  %s\ngot\n  %s", want, got)
				}
			}
		})
	}
}

// A policy that passes every check, as upstream's valid cases write it.
const validMatch = `"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{"operations": ["*"], "apiGroups": ["a"], "apiVersions": ["a"], "resources": ["a"]}], "namespaceSelector": {"matchLabels": {"a": "b"}}, "objectSelector": {"matchLabels": {"a": "b"}}, "matchPolicy": "Exact"}`

func TestValidatingAdmissionPolicyChecksAgreeWithUpstreamCases(t *testing.T) {
	checkCases(t, []upstreamCase{
		{"Validations is required", vap(`{}`), []string{
			`spec.validations: Required value: validations or auditAnnotations must contain at least one item`,
			// validateValidatingAdmissionPolicySpec names both fields.
			`spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item`,
		}},
		{"Invalid Validations Reason", vap(`{"validations": [{"expression": "object.x < 100", "reason": "other"}]}`),
			[]string{`spec.validations[0].reason: Unsupported value: "other"`}},
		{"MatchConstraints is required", vap(`{"validations": [{"expression": "object.x < 100"}]}`),
			[]string{`spec.matchConstraints: Required value`}},
		{"matchConstraints.resourceRules is required", vap(`{"validations": [{"expression": "object.x < 100"}], "matchConstraints": {}}`),
			[]string{`spec.matchConstraints.resourceRules: Required value`}},
		{"expression is required", vap(`{"validations": [{}]}`),
			[]string{`spec.validations[0].expression: Required value: expression is not specified`}},
		{"invalid expression", vap(`{"validations": [{"expression": "object.x in [1, 2, "}], "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["a"], "apiVersions": ["a"], "resources": ["*/*"]}]}}`),
			[]string{`spec.validations[0].expression: Invalid value: "object.x in [1, 2, ": compilation failed: ERROR: <input>:1:20: Syntax error: missing ']' at '<EOF>`}},
		{"invalid messageExpression", vap(`{"validations": [{"expression": "true", "messageExpression": "object.x in [1, 2, "}], "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["a"], "apiVersions": ["a"], "resources": ["*/*"]}]}}`),
			[]string{`spec.validations[0].messageExpression: Invalid value: "object.x in [1, 2, ": compilation failed: ERROR: <input>:1:20: Syntax error: missing ']' at '<EOF>`}},
		{"messageExpression of wrong type", vap(`{"validations": [{"expression": "true", "messageExpression": "0 == 0"}], "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["a"], "apiVersions": ["a"], "resources": ["*/*"]}]}}`),
			[]string{`spec.validations[0].messageExpression: Invalid value: "0 == 0": must evaluate to string`}},
		{"invalid auditAnnotations valueExpression type", vap(`{"auditAnnotations": [{"key": "something", "valueExpression": "true"}]}`),
			[]string{`spec.auditAnnotations[0].valueExpression: Invalid value: "true": must evaluate to one of [string null_type]`}},
		{"invalid auditAnnotations valueExpression", vap(`{"auditAnnotations": [{"key": "something", "valueExpression": "object.x in [1, 2, "}]}`),
			[]string{`spec.auditAnnotations[0].valueExpression: Invalid value: "object.x in [1, 2, ": compilation failed: ERROR: <input>:1:19: Syntax error: missing ']' at '<EOF>`}},
		{"single match condition must have a name", vap(`{"matchConditions": [{"expression": "true"}], "validations": [{"expression": "object.x < 100"}]}`),
			[]string{`spec.matchConditions[0].name: Required value`}},
		{"match condition with parameters allowed", vap(`{"paramKind": {"kind": "Foo", "apiVersion": "foobar/v1alpha1"}, ` + validMatch + `, "matchConditions": [{"name": "hasParams", "expression": "params.foo == \"okay\""}], "validations": [{"expression": "object.x < 100"}]}`),
			nil},
		{"match condition with parameters not allowed if no param kind", vap(`{` + validMatch + `, "matchConditions": [{"name": "hasParams", "expression": "params.foo == \"okay\""}], "validations": [{"expression": "object.x < 100"}]}`),
			[]string{`undeclared reference to 'params'`}},
		{"variable composition empty name", vap(`{"variables": [{"name": "    ", "expression": "true"}], "validations": [{"expression": "true"}]}`),
			[]string{`spec.variables[0].name: Required value: name is not specified`}},
		{"variable composition name is not a valid identifier", vap(`{"variables": [{"name": "4ever", "expression": "true"}], "validations": [{"expression": "true"}]}`),
			[]string{`spec.variables[0].name: Invalid value: "4ever": name is not a valid CEL identifier`}},
		{"variable composition cannot compile", vap(`{"variables": [{"name": "foo", "expression": "114 + '514'"}], "validations": [{"expression": "true"}]}`),
			[]string{`spec.variables[0].expression: Invalid value: "114 + '514'": compilation failed: ERROR: <input>:1:5: found no matching overload for '_+_' applied to '(int, string)`}},
		{"validation referred to non-existing variable", vap(`{"variables": [{"name": "foo", "expression": "1 + 1"}, {"name": "bar", "expression": "variables.foo + 1"}], "validations": [{"expression": "variables.foo > 1"}, {"expression": "variables.replicas == 2"}]}`),
			[]string{`spec.validations[1].expression: Invalid value: "variables.replicas == 2": compilation failed: ERROR: <input>:1:10: undefined field 'replicas'`}},
		{"variables wrong order", vap(`{"variables": [{"name": "correct", "expression": "object"}, {"name": "bar", "expression": "variables.foo + 1"}, {"name": "foo", "expression": "1 + 1"}], "validations": [{"expression": "variables.foo > 1"}]}`),
			[]string{`spec.variables[1].expression: Invalid value: "variables.foo + 1": compilation failed: ERROR: <input>:1:10: undefined field 'foo'`}},
	})
}

// Not a case of upstream's table: validateValidatingAdmissionPolicySpec
// compiles with a composited compiler only when the policy has variables
// (its getCompiler), so that without any, variables is undeclared rather
// than an empty object.
func TestAPolicyWithoutVariablesCannotReadThem(t *testing.T) {
	checkCases(t, []upstreamCase{
		{"variables without variables", vap(`{` + validMatch + `, "validations": [{"expression": "variables.foo == 1"}]}`),
			[]string{`spec.validations[0].expression: Invalid value: "variables.foo == 1": compilation failed: ERROR: <input>:1:1: undeclared reference to 'variables'`}},
	})
}

func TestBindingChecksAgreeWithUpstreamCases(t *testing.T) {
	const paramRef = `"paramRef": {"name": "xyzlimit-scale-setting.example.com", "parameterNotFoundAction": "Deny"}`
	checkCases(t, []upstreamCase{
		{"PolicyName is required", binding(`{}`), []string{`spec.policyName: Required value`}},
		{"validationActions must be unique", binding(`{"policyName": "xyzlimit-scale.example.com", ` + paramRef + `, "validationActions": ["Deny", "Deny"]}`),
			[]string{`spec.validationActions[1]: Duplicate value: "Deny"`}},
		{"validationActions must contain supported values", binding(`{"policyName": "xyzlimit-scale.example.com", ` + paramRef + `, "validationActions": ["illegal"]}`),
			[]string{`Unsupported value: "illegal": supported values: "Audit", "Deny", "Warn"`}},
		{"paramRef selector must not be set when name is set", binding(`{"policyName": "xyzlimit-scale.example.com", "validationActions": ["Deny"], "paramRef": {"name": "xyzlimit-scale-setting.example.com", "selector": {"matchLabels": {"label": "value"}}, "parameterNotFoundAction": "Deny"}}`),
			[]string{`spec.paramRef.name: Forbidden: name and selector are mutually exclusive, spec.paramRef.selector: Forbidden: name and selector are mutually exclusive`}},
		{"paramRef parameterNotFoundAction must be set", binding(`{"policyName": "xyzlimit-scale.example.com", "validationActions": ["Deny"], "paramRef": {"name": "xyzlimit-scale-setting.example.com"}}`),
			[]string{`spec.paramRef.parameterNotFoundAction: Required value`}},
		{"paramRef parameterNotFoundAction must be an valid value", binding(`{"policyName": "xyzlimit-scale.example.com", "validationActions": ["Deny"], "paramRef": {"name": "xyzlimit-scale-setting.example.com", "parameterNotFoundAction": "invalid"}}`),
			[]string{`spec.paramRef.parameterNotFoundAction: Unsupported value: "invalid": supported values: "Deny", "Allow"`}},
		{"paramRef one of name or selector", binding(`{"policyName": "xyzlimit-scale.example.com", "validationActions": ["Deny"], "paramRef": {"parameterNotFoundAction": "Deny"}}`),
			[]string{`one of name or selector must be specified`}},
	})
}
