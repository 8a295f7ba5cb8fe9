package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	apimachinerypath "k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// policyHeader tells the kinds apart.
type policyHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// strictUnmarshal refuses fields the Go type does not have, as `kubectl
// apply` with its default strict field validation would.
func strictUnmarshal(raw []byte, into any) error {
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	return decoder.Decode(into)
}

func (s *server) compile(req *compileRequest) (*compileAnswer, error) {
	var header policyHeader
	if err := json.Unmarshal(req.Policy, &header); err != nil {
		return nil, err
	}
	answer := &compileAnswer{Errors: map[string][]string{}, TypeChecking: []expressionWarning{}, TypeCheckedKinds: []string{}}
	versions := make([]*version.Version, 0, len(req.Versions))
	for _, v := range req.Versions {
		parsed, err := version.ParseMajorMinor(v)
		if err != nil {
			return nil, fmt.Errorf("version %q: %w", v, err)
		}
		versions = append(versions, parsed)
	}
	switch header.Kind {
	case "ValidatingAdmissionPolicy":
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := strictUnmarshal(req.Policy, policy); err != nil {
			return nil, fmt.Errorf("not a ValidatingAdmissionPolicy of %s: %w", header.APIVersion, err)
		}
		answer.Errors = perVersion(req.Versions, versions, func(envSet *environment.EnvSet) field.ErrorList {
			return validateVAPExpressions(policy, envSet)
		})
		checked, warnings, err := s.typeCheck(policy, req.CRDs)
		if err != nil {
			return nil, err
		}
		answer.TypeCheckedKinds = checked
		answer.TypeChecking = warnings
	case "MutatingAdmissionPolicy":
		policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
		if err := strictUnmarshal(req.Policy, policy); err != nil {
			return nil, fmt.Errorf("not a MutatingAdmissionPolicy of %s: %w", header.APIVersion, err)
		}
		answer.Errors = perVersion(req.Versions, versions, func(envSet *environment.EnvSet) field.ErrorList {
			return validateMAPExpressions(policy, envSet)
		})
	case "ValidatingAdmissionPolicyBinding":
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := strictUnmarshal(req.Policy, binding); err != nil {
			return nil, fmt.Errorf("not a ValidatingAdmissionPolicyBinding of %s: %w", header.APIVersion, err)
		}
		errs := validateBinding(binding.Spec.PolicyName, binding.Spec.ParamRef)
		errs = append(errs, validateValidationActions(binding.Spec.ValidationActions, field.NewPath("spec", "validationActions"))...)
		for _, v := range req.Versions {
			answer.Errors[v] = errorStrings(errs)
		}
	case "MutatingAdmissionPolicyBinding":
		binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		if err := strictUnmarshal(req.Policy, binding); err != nil {
			return nil, fmt.Errorf("not a MutatingAdmissionPolicyBinding of %s: %w", header.APIVersion, err)
		}
		errs := validateBinding(binding.Spec.PolicyName, binding.Spec.ParamRef)
		for _, v := range req.Versions {
			answer.Errors[v] = errorStrings(errs)
		}
	default:
		return nil, fmt.Errorf("kind %q: only ValidatingAdmissionPolicy, MutatingAdmissionPolicy and their bindings are checked", header.Kind)
	}
	return answer, nil
}

// perVersion runs check in each version's base environment, the versions
// at once (each compilation is independent; a large policy takes seconds
// to compile), and keys the errors by the version's name.
func perVersion(names []string, versions []*version.Version, check func(*environment.EnvSet) field.ErrorList) map[string][]string {
	results := make([][]string, len(versions))
	var wg sync.WaitGroup
	for i, v := range versions {
		wg.Add(1)
		go func(i int, v *version.Version) {
			defer wg.Done()
			results[i] = errorStrings(check(environment.MustBaseEnvSet(v)))
		}(i, v)
	}
	wg.Wait()
	out := map[string][]string{}
	for i, name := range names {
		out[name] = results[i]
	}
	return out
}

func errorStrings(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// The checks below are those of kubernetes pkg/apis/admissionregistration/
// validation/validation.go (validateValidatingAdmissionPolicySpec,
// validateMutatingAdmissionPolicySpec and their helpers) that compile CEL
// or check what CEL reads, for a policy being created: every expression
// in the NewExpressions environment of the compatibility version, with the
// composited compiler when the policy has variables (variables, validations,
// messages, audit annotations, mutations) and the stateless one otherwise
// and for match conditions (which cannot read variables). That package belongs to k8s.io/kubernetes, which is not a
// published module; the compilers and environments it calls are the ones
// used here.

var celIdentRegex = regexp.MustCompile("^[_a-zA-Z][_a-zA-Z0-9]*$")
var celReserved = sets.NewString("true", "false", "null", "in",
	"as", "break", "const", "continue", "else",
	"for", "function", "if", "import", "let",
	"loop", "package", "namespace", "return",
	"var", "void", "while")

func isCELIdentifier(name string) bool {
	return celIdentRegex.MatchString(name) && !celReserved.Has(name)
}

var newlineMatcher = regexp.MustCompile(`[\n\r]+`)

func convertCELError(fldPath *field.Path, expression string, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(fldPath, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(fldPath, expression, err.Detail)
	default:
		return field.InternalError(fldPath, err)
	}
}

// compileVariables is the compiler of a policy's expressions with its
// variables compiled and stored, as validateVariable does one by one. Like
// validateValidatingAdmissionPolicySpec's getCompiler, it is a composited
// compiler only when the policy has variables, and the stateless one
// otherwise: an expression that reads variables then fails as undeclared.
func compileVariables(envSet *environment.EnvSet, variables []admissionregistrationv1.Variable, hasParams bool, fldPath *field.Path) (plugincel.Compiler, field.ErrorList) {
	if len(variables) == 0 {
		return plugincel.NewCompiler(envSet), nil
	}
	var errs field.ErrorList
	compiler, err := plugincel.NewCompositedCompiler(envSet)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(fldPath, err)}
	}
	for i, v := range variables {
		path := fldPath.Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(path.Child("name"), "name is not specified"))
		} else if !isCELIdentifier(v.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), v.Name, "name is not a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(path.Child("expression"), "expression is not specified"))
			continue
		}
		variable := &validating.Variable{Name: v.Name, Expression: v.Expression}
		result := compiler.CompileAndStoreVariable(variable, plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, environment.NewExpressions)
		if result.Error != nil {
			errs = append(errs, convertCELError(path.Child("expression"), v.Expression, result.Error))
		}
	}
	return compiler, errs
}

// matchConstraintsRequired is the spec's check that matchConstraints is
// there with at least one resource rule, which gives the expressions their
// types.
func matchConstraintsRequired(m *admissionregistrationv1.MatchResources, fldPath *field.Path) field.ErrorList {
	if m == nil {
		return field.ErrorList{field.Required(fldPath.Child("matchConstraints"), "")}
	}
	if len(m.ResourceRules) == 0 {
		return field.ErrorList{field.Required(fldPath.Child("matchConstraints", "resourceRules"), "")}
	}
	return nil
}

func compileMatchConditions(envSet *environment.EnvSet, conditions []admissionregistrationv1.MatchCondition, hasParams bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conditions) > 64 {
		errs = append(errs, field.TooMany(fldPath, len(conditions), 64))
	}
	stateless := plugincel.NewCompiler(envSet)
	names := sets.NewString()
	for i, c := range conditions {
		path := fldPath.Index(i)
		if strings.TrimSpace(c.Expression) == "" {
			errs = append(errs, field.Required(path.Child("expression"), ""))
		} else {
			condition := matchconditions.MatchCondition{Name: c.Name, Expression: strings.TrimSpace(c.Expression)}
			result := stateless.CompileCELExpression(&condition, plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, environment.NewExpressions)
			if result.Error != nil {
				errs = append(errs, convertCELError(path.Child("expression"), c.Expression, result.Error))
			}
		}
		if c.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		} else if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
		}
		names.Insert(c.Name)
	}
	return errs
}

// maxAuditAnnotationValueExpressionLength is validation.go's limit on an
// audit annotation's expression (5 KiB).
const maxAuditAnnotationValueExpressionLength = 5 * 1024

var supportedReasons = sets.NewString("Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge")

// validateVAPExpressions is the CEL part of validateValidatingAdmissionPolicySpec.
func validateVAPExpressions(policy *admissionregistrationv1.ValidatingAdmissionPolicy, envSet *environment.EnvSet) field.ErrorList {
	spec := &policy.Spec
	fldPath := field.NewPath("spec")
	hasParams := spec.ParamKind != nil
	var errs field.ErrorList
	if spec.FailurePolicy == nil {
		errs = append(errs, field.Required(fldPath.Child("failurePolicy"), ""))
	}
	errs = append(errs, matchConstraintsRequired(spec.MatchConstraints, fldPath)...)
	errs = append(errs, compileMatchConditions(envSet, spec.MatchConditions, hasParams, fldPath.Child("matchConditions"))...)
	compiler, varErrs := compileVariables(envSet, spec.Variables, hasParams, fldPath.Child("variables"))
	errs = append(errs, varErrs...)
	if compiler == nil {
		return errs
	}
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		const why = "validations or auditAnnotations must contain at least one item"
		errs = append(errs, field.Required(fldPath.Child("validations"), why), field.Required(fldPath.Child("auditAnnotations"), why))
	}
	for i, v := range spec.Validations {
		path := fldPath.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(path.Child("expression"), "expression is not specified"))
		} else {
			result := compiler.CompileCELExpression(&validating.ValidationCondition{Expression: v.Expression}, plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, environment.NewExpressions)
			if result.Error != nil {
				errs = append(errs, convertCELError(path.Child("expression"), v.Expression, result.Error))
			}
		}
		if len(v.MessageExpression) > 0 && strings.TrimSpace(v.MessageExpression) == "" {
			errs = append(errs, field.Invalid(path.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
		} else if strings.TrimSpace(v.MessageExpression) != "" {
			// Messages are compiled without the authorizer: the API server
			// evaluates them without one.
			result := compiler.CompileCELExpression(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false}, environment.NewExpressions)
			if result.Error != nil {
				errs = append(errs, convertCELError(path.Child("messageExpression"), v.MessageExpression, result.Error))
			}
		}
		trimmed := strings.TrimSpace(v.Message)
		if len(v.Message) > 0 && trimmed == "" {
			errs = append(errs, field.Invalid(path.Child("message"), v.Message, "message must be non-empty if specified"))
		} else if newlineMatcher.MatchString(trimmed) {
			errs = append(errs, field.Invalid(path.Child("message"), v.Message, "message must not contain line breaks"))
		}
		if v.Reason != nil && !supportedReasons.Has(string(*v.Reason)) {
			errs = append(errs, field.NotSupported(path.Child("reason"), *v.Reason, supportedReasons.List()))
		}
	}
	for i, a := range spec.AuditAnnotations {
		path := fldPath.Child("auditAnnotations").Index(i).Child("valueExpression")
		trimmed := strings.TrimSpace(a.ValueExpression)
		switch {
		case trimmed == "":
			errs = append(errs, field.Required(path, "valueExpression is not specified"))
		case len(trimmed) > maxAuditAnnotationValueExpressionLength:
			errs = append(errs, field.Required(path, fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
		default:
			result := compiler.CompileCELExpression(&validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: trimmed}, plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, environment.NewExpressions)
			if result.Error != nil {
				errs = append(errs, convertCELError(path, a.ValueExpression, result.Error))
			}
		}
	}
	return errs
}

// validateMAPExpressions is the CEL part of validateMutatingAdmissionPolicySpec.
func validateMAPExpressions(policy *admissionregistrationv1.MutatingAdmissionPolicy, envSet *environment.EnvSet) field.ErrorList {
	spec := &policy.Spec
	fldPath := field.NewPath("spec")
	hasParams := spec.ParamKind != nil
	var errs field.ErrorList
	if spec.FailurePolicy == nil {
		errs = append(errs, field.Required(fldPath.Child("failurePolicy"), ""))
	}
	if spec.ReinvocationPolicy == "" {
		errs = append(errs, field.Required(fldPath.Child("reinvocationPolicy"), ""))
	}
	errs = append(errs, matchConstraintsRequired(spec.MatchConstraints, fldPath)...)
	errs = append(errs, compileMatchConditions(envSet, spec.MatchConditions, hasParams, fldPath.Child("matchConditions"))...)
	compiler, varErrs := compileVariables(envSet, spec.Variables, hasParams, fldPath.Child("variables"))
	errs = append(errs, varErrs...)
	if compiler == nil {
		return errs
	}
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(fldPath.Child("mutations"), "mutations must contain at least one item"))
	}
	options := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true, HasPatchTypes: true}
	for i, m := range spec.Mutations {
		path := fldPath.Child("mutations").Index(i)
		switch m.PatchType {
		case admissionregistrationv1.PatchTypeJSONPatch:
			if m.JSONPatch == nil || strings.TrimSpace(m.JSONPatch.Expression) == "" {
				errs = append(errs, field.Required(path.Child("jsonPatch", "expression"), ""))
				continue
			}
			result := compiler.CompileCELExpression(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, options, environment.NewExpressions)
			if result.Error != nil {
				errs = append(errs, convertCELError(path.Child("jsonPatch", "expression"), m.JSONPatch.Expression, result.Error))
			}
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration == nil || strings.TrimSpace(m.ApplyConfiguration.Expression) == "" {
				errs = append(errs, field.Required(path.Child("applyConfiguration", "expression"), ""))
				continue
			}
			result := compiler.CompileCELExpression(&patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, options, environment.NewExpressions)
			if result.Error != nil {
				errs = append(errs, convertCELError(path.Child("applyConfiguration", "expression"), m.ApplyConfiguration.Expression, result.Error))
			}
		default:
			errs = append(errs, field.NotSupported(path.Child("patchType"), m.PatchType, []string{string(admissionregistrationv1.PatchTypeJSONPatch), string(admissionregistrationv1.PatchTypeApplyConfiguration)}))
		}
	}
	return errs
}

// validateBinding is what validateValidatingAdmissionPolicyBindingSpec and
// validateMutatingAdmissionPolicyBindingSpec check of the policy's name
// and the params reference.
func validateBinding(policyName string, paramRef *admissionregistrationv1.ParamRef) field.ErrorList {
	var errs field.ErrorList
	fldPath := field.NewPath("spec")
	if policyName == "" {
		errs = append(errs, field.Required(fldPath.Child("policyName"), ""))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(policyName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("policyName"), policyName, msg))
		}
	}
	if paramRef == nil {
		return errs
	}
	path := fldPath.Child("paramRef")
	if paramRef.Name != "" {
		for _, msg := range apimachinerypath.ValidatePathSegmentName(paramRef.Name, false) {
			errs = append(errs, field.Invalid(path.Child("name"), paramRef.Name, msg))
		}
		if paramRef.Selector != nil {
			errs = append(errs, field.Forbidden(path.Child("name"), "name and selector are mutually exclusive"))
		}
	}
	if paramRef.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(paramRef.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
		if paramRef.Name != "" {
			errs = append(errs, field.Forbidden(path.Child("selector"), "name and selector are mutually exclusive"))
		}
	}
	if paramRef.Name == "" && paramRef.Selector == nil {
		errs = append(errs, field.Required(path, "one of name or selector must be specified"))
	}
	if paramRef.ParameterNotFoundAction == nil || *paramRef.ParameterNotFoundAction == "" {
		errs = append(errs, field.Required(path.Child("parameterNotFoundAction"), ""))
	} else if a := *paramRef.ParameterNotFoundAction; a != admissionregistrationv1.DenyAction && a != admissionregistrationv1.AllowAction {
		errs = append(errs, field.NotSupported(path.Child("parameterNotFoundAction"), a, []string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}))
	}
	return errs
}

var validValidationActions = sets.NewString(string(admissionregistrationv1.Deny), string(admissionregistrationv1.Warn), string(admissionregistrationv1.Audit))

// validateValidationActions is the binding's check of its actions.
func validateValidationActions(actions []admissionregistrationv1.ValidationAction, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.NewString()
	for i, action := range actions {
		if !validValidationActions.Has(string(action)) {
			errs = append(errs, field.NotSupported(fldPath.Index(i), action, validValidationActions.List()))
		}
		if seen.Has(string(action)) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), action))
		}
		seen.Insert(string(action))
	}
	if seen.Has(string(admissionregistrationv1.Deny)) && seen.Has(string(admissionregistrationv1.Warn)) {
		errs = append(errs, field.Invalid(fldPath, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if seen.Len() == 0 {
		errs = append(errs, field.Required(fldPath, "at least one validation action is required"))
	}
	return errs
}
