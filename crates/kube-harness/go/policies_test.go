package main

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The defaults of policies.go follow kubernetes
// pkg/apis/admissionregistration/v1/defaults.go
// (SetDefaults_ValidatingAdmissionPolicySpec,
// SetDefaults_MutatingAdmissionPolicySpec, SetDefaults_MatchResources,
// SetDefaults_Rule). The cases are upstream's TestDefaultAdmissionPolicy
// (pkg/apis/admissionregistration/v1alpha1/defaults_test.go, the same
// functions for that version), as v1 objects. Its binding case that
// defaults paramRef.parameterNotFoundAction is v1alpha1's alone (v1 has no
// such default), so it is not among them.
func TestPolicyDefaultsAgreeWithUpstreamCases(t *testing.T) {
	fail := admissionregistrationv1.Fail
	equivalent := admissionregistrationv1.Equivalent
	allScopes := admissionregistrationv1.AllScopes
	defaulted := func(rules ...admissionregistrationv1.NamedRuleWithOperations) *admissionregistrationv1.MatchResources {
		return &admissionregistrationv1.MatchResources{
			MatchPolicy:       &equivalent,
			NamespaceSelector: &metav1.LabelSelector{},
			ObjectSelector:    &metav1.LabelSelector{},
			ResourceRules:     rules,
		}
	}

	t.Run("ValidatingAdmissionPolicy", func(t *testing.T) {
		got := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{},
		}}
		setVAPDefaults(got)
		want := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: defaulted(),
			FailurePolicy:    &fail,
		}}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got.Spec, want.Spec)
		}
	})

	t.Run("ValidatingAdmissionPolicyBinding", func(t *testing.T) {
		got := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			MatchResources: &admissionregistrationv1.MatchResources{},
		}}
		setBindingDefaults(got.Spec.MatchResources)
		want := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			MatchResources: defaulted(),
		}}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got.Spec, want.Spec)
		}
	})

	t.Run("scope=*", func(t *testing.T) {
		got := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{}},
			},
		}}
		setVAPDefaults(got)
		want := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: defaulted(admissionregistrationv1.NamedRuleWithOperations{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Rule: admissionregistrationv1.Rule{Scope: &allScopes}},
			}),
			FailurePolicy: &fail,
		}}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got.Spec.MatchConstraints, want.Spec.MatchConstraints)
		}
	})

	t.Run("MutatingAdmissionPolicy", func(t *testing.T) {
		mutation := admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "fake string"}}
		got := &admissionregistrationv1.MutatingAdmissionPolicy{Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{},
			Mutations:        []admissionregistrationv1.Mutation{mutation},
		}}
		setMAPDefaults(got)
		want := &admissionregistrationv1.MutatingAdmissionPolicy{Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: defaulted(),
			FailurePolicy:    &fail,
			Mutations:        []admissionregistrationv1.Mutation{mutation},
		}}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got.Spec, want.Spec)
		}
	})
}
