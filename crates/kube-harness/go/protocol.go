package main

// The protocol: every message the program reads or writes, and how it reads
// them. Its other half is crates/kube-harness/src/protocol.rs, the same
// messages in Rust. Neither side takes the other's word for a field: the
// program reads a request exactly (decodeExact: a field it does not know,
// or one of its own that is missing, refuses the request, naming it), and
// the client reads every answer the same way (deny_unknown_fields, no field
// defaulted), so a field renamed or added on one side fails the first
// exchange instead of quietly weakening a check. protocolVersion names this
// set of messages; the client asks for it first (the hello op) and refuses a
// program of another version.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// protocolVersion is the version of the messages below. Change it with any
// change to them, and PROTOCOL_VERSION in crates/kube-harness/src/protocol.rs
// with it.
const protocolVersion = 2

// envelope is one line of input: the op and its arguments, whose type the
// op names (ops, in main.go).
type envelope struct {
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

// reply is one line of output: the op's answer, or why there is none. Both
// fields are always written, one of them null.
type reply struct {
	Answer any     `json:"answer"`
	Error  *string `json:"error"`
}

// helloRequest asks for the protocol version; it has no arguments.
type helloRequest struct{}

// helloAnswer names the protocol version the program speaks.
type helloAnswer struct {
	Protocol int `json:"protocol"`
}

// compileRequest asks for one policy to be compiled as the API server
// compiles a policy it is asked to create.
type compileRequest struct {
	// Policy is a ValidatingAdmissionPolicy, a MutatingAdmissionPolicy or
	// a binding of either.
	Policy json.RawMessage `json:"policy"`
	// Versions are compatibility versions, "1.30" ... "1.36".
	Versions []string `json:"versions"`
	// CRDs give the type checker the schemas of the kinds the policy
	// matches (as the API server's OpenAPI would).
	CRDs []json.RawMessage `json:"crds"`
}

// compileAnswer holds, per version, the field errors that would refuse the
// policy, and the type-checking warnings status.typeChecking would carry.
type compileAnswer struct {
	Errors       map[string][]string `json:"errors"`
	TypeChecking []expressionWarning `json:"typeChecking"`
	// TypeCheckedKinds are the kinds the type checker found a schema for;
	// the others' expressions are checked with object typed dyn.
	TypeCheckedKinds []string `json:"typeCheckedKinds"`
}

// expressionWarning is one status.typeChecking.expressionWarnings entry.
type expressionWarning struct {
	FieldRef string `json:"fieldRef"`
	Warning  string `json:"warning"`
}

// crdUpdateRequest asks whether the API server would accept New as an
// update of Old.
type crdUpdateRequest struct {
	Old json.RawMessage `json:"old"`
	New json.RawMessage `json:"new"`
	// Versions are compatibility versions to compile New's rules for.
	Versions []string `json:"versions"`
}

// crdUpdateAnswer is what the CRD validation and the rule compiler said.
type crdUpdateAnswer struct {
	// Errors are ValidateCustomResourceDefinitionUpdate's, in the API
	// server's words.
	Errors []string `json:"errors"`
	// RuleErrors are, per compatibility version, the rules of New that do
	// not compile in that version's NewExpressions environment.
	RuleErrors map[string][]string `json:"ruleErrors"`
	// Rules counts the x-kubernetes-validations rules of New.
	Rules int `json:"rules"`
}

// admitRequest is one write through the admission path.
type admitRequest struct {
	// Request is the AdmissionRequest olm-guard's scenario describes: its
	// object and oldObject as the client sent and the API server stored
	// them.
	Request json.RawMessage `json:"request"`
	// CRDs are the CustomResourceDefinitions served, for the request's
	// kind and for params.
	CRDs []json.RawMessage `json:"crds"`
	// Policies and bindings, validating and mutating.
	ValidatingPolicies []json.RawMessage `json:"validatingPolicies"`
	ValidatingBindings []json.RawMessage `json:"validatingBindings"`
	MutatingPolicies   []json.RawMessage `json:"mutatingPolicies"`
	MutatingBindings   []json.RawMessage `json:"mutatingBindings"`
	// Objects are the cluster's objects: params of the policies and
	// namespaces.
	Objects []json.RawMessage `json:"objects"`
	// Authorizer answers the policies' authorizer checks.
	Authorizer []authzAnswer `json:"authorizer"`
}

// authzAnswer is one authorizer answer given with a request: the
// attributes of the check and what the authorizer said. The tests fill
// the table with the answers olm-guard's RBAC engine gave for the same
// request, so that Kubernetes' evaluation and olm-guard's see the same
// cluster.
type authzAnswer struct {
	User        string   `json:"user"`
	Groups      []string `json:"groups"`
	Verb        string   `json:"verb"`
	Namespace   string   `json:"namespace"`
	APIGroup    string   `json:"apiGroup"`
	Resource    string   `json:"resource"`
	Subresource string   `json:"subresource"`
	Name        string   `json:"name"`
	// Path is set for a non-resource check, and then the resource fields
	// are empty.
	Path    string `json:"path"`
	Allowed bool   `json:"allowed"`
	// Error is the text of an authorizer that could not answer.
	Error string `json:"error"`
}

// admitAnswer says how far the write got and what each stage said. Every
// field is written; the optional ones are null when they do not apply.
type admitAnswer struct {
	// Refused is the API server's error when the write was refused
	// before admission policies decided (a body it cannot decode).
	Refused *string `json:"refused"`
	// UnknownFields are the fields the decoder pruned ("unknown field"
	// warnings when field validation is Warn).
	UnknownFields []string `json:"unknownFields"`
	// Object and OldObject are the objects as admission saw them: decoded,
	// prepared, and (Object) after the mutating policies.
	Object    any `json:"object"`
	OldObject any `json:"oldObject"`
	// Mutated says whether the mutating policies changed the object.
	Mutated bool `json:"mutated"`
	// PrunedObject is the mutated object as the CRD's schema would store
	// it (unknown fields pruned); null when nothing was mutated.
	PrunedObject any `json:"prunedObject"`
	// MutationError is the status a mutating policy failed the request
	// with.
	MutationError *status `json:"mutationError"`
	// SchemaError is the custom resource's validation error (the OpenAPI
	// schema and its x-kubernetes-validations rules).
	SchemaError *status `json:"schemaError"`
	// Allowed, Status: the validating policies' verdict, on the object
	// even when the schema refused it (a cluster would not have asked them
	// then: SchemaError is the answer a client reads).
	Allowed bool    `json:"allowed"`
	Status  *status `json:"status"`
	// SchemaWarnings are the warnings of the mutating policies and the
	// custom resource's validation (ratcheted CRD rules).
	SchemaWarnings []string `json:"schemaWarnings"`
	// Warnings are the validating policies' warnings, each once, in order
	// (the response carries SchemaWarnings, then these).
	Warnings []string `json:"warnings"`
	// AuditAnnotations are the annotations the policies added.
	AuditAnnotations map[string]string `json:"auditAnnotations"`
	// Unasked are authorizer checks not in the table.
	Unasked []string `json:"unasked"`
}

// status is an API server status, as a client reads it.
type status struct {
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Code    int32  `json:"code"`
}

// decodeExact reads raw into into (a pointer to one of the messages above,
// called what in errors) and refuses, naming the field by its path, a field the message does not
// have and a field of the message that raw leaves out. Fields holding
// Kubernetes objects (json.RawMessage) are checked as present, and their
// content is left to the Kubernetes decoders that read them.
func decodeExact(raw []byte, into any, what string) error {
	if err := checkFields(raw, reflect.TypeOf(into).Elem(), what); err != nil {
		return err
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	return decoder.Decode(into)
}

var rawMessageType = reflect.TypeOf(json.RawMessage{})

// checkFields walks raw along t: for a struct, every JSON field of t must be
// in raw's object and every key of raw's object must be a field of t; lists
// and pointers are walked into. Values of other types (strings, numbers,
// maps, raw messages) are left to json.Decoder, which refuses a wrong type.
func checkFields(raw []byte, t reflect.Type, path string) error {
	if t == rawMessageType || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkFields(raw, t.Elem(), path)
	case reflect.Slice:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("%s: not a list: %w", path, err)
		}
		for i, item := range items {
			if err := checkFields(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Struct:
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return fmt.Errorf("%s: not an object: %w", path, err)
		}
		known := map[string]bool{}
		var missing []string
		for i := 0; i < t.NumField(); i++ {
			name := jsonName(t.Field(i))
			if name == "" {
				continue
			}
			known[name] = true
			value, ok := fields[name]
			if !ok {
				missing = append(missing, name)
				continue
			}
			if err := checkFields(value, t.Field(i).Type, path+"."+name); err != nil {
				return err
			}
		}
		var unknown []string
		for name := range fields {
			if !known[name] {
				unknown = append(unknown, name)
			}
		}
		sort.Strings(unknown)
		if len(unknown) > 0 {
			return fmt.Errorf("%s: unknown field %s (this program speaks protocol %d; rebuild it with scripts/build-kube-harness.sh if the client is newer)", path, strings.Join(unknown, ", "), protocolVersion)
		}
		if len(missing) > 0 {
			return fmt.Errorf("%s: missing field %s (protocol %d sends every field)", path, strings.Join(missing, ", "), protocolVersion)
		}
	}
	return nil
}

// jsonName is the name a struct field has in JSON, "" for a field that
// encoding/json leaves out.
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	if name, _, _ := strings.Cut(tag, ","); name != "" {
		return name
	}
	return f.Name
}
