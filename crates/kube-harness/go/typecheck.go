package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// crdResolver resolves the schema of a custom resource kind as
// resolver.ClientDiscoveryResolver does on a cluster, from the OpenAPI v3
// schema the API server publishes for it (publishedSchema), its references
// populated as the resolver populates them.
type crdResolver struct {
	schemas map[schema.GroupVersionKind]*spec.Schema
}

// The definitions' names of ObjectMeta and TypeMeta.
var (
	objectMetaType = metav1.ObjectMeta{}.OpenAPIModelName()
	typeMetaType   = metav1.TypeMeta{}.OpenAPIModelName()
)

// definitions are apiextensions-apiserver's generated OpenAPI definitions
// (ObjectMeta and what it references among them), referenced by their
// OpenAPI model names.
var definitions = generatedopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
	return spec.MustCreateRef(refPrefix + common.EscapeJsonPointer(name))
})

const refPrefix = "#/components/schemas/"

// The descriptions the builder gives metadata, and apiVersion and kind of
// an embedded resource (builder.go, swaggerPartialObjectMetadataDescriptions
// and addEmbeddedProperties).
var (
	metadataDescription   = metav1beta1.PartialObjectMetadata{}.SwaggerDoc()["metadata"]
	apiVersionDescription = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	kindDescription       = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)

// publishedSchema is the OpenAPI v3 schema the API server publishes for one
// version of a CRD, its references not populated yet. apiextensions-apiserver
// builds it in controller/openapi/builder, a package that needs
// k8s.io/streaming, which the admission code does not; these are its steps
// for OpenAPI v3, with the same parts: generateBuilder's schema (the
// version's structural schema, unfolded; none when it has invalid types or
// is not structural) and buildKubeNative (an object without a schema;
// otherwise metadata a reference to ObjectMeta, apiVersion and kind from
// TypeMeta, the same for every embedded resource: addTypeMetaProperties,
// addEmbeddedProperties), with the group-version-kind extension.
func publishedSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec.Schema, error) {
	var structural *structuralschema.Structural
	validation, err := apihelpers.GetSchemaForVersion(crd, version)
	if err != nil {
		return nil, err
	}
	if validation != nil && validation.OpenAPIV3Schema != nil {
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(validation, internal, nil); err != nil {
			return nil, fmt.Errorf("%s version %s: %w", crd.Name, version, err)
		}
		if !apiextensionsvalidation.SchemaHasInvalidTypes(internal.OpenAPIV3Schema) {
			if s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema); err == nil && len(structuralschema.ValidateStructural(nil, s)) == 0 {
				structural = s.Unfold()
			}
		}
	}
	var published *spec.Schema
	if structural == nil {
		published = &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
	} else {
		published = structural.ToKubeOpenAPI()
		published.SetProperty("metadata", *spec.RefSchema(refPrefix + common.EscapeJsonPointer(objectMetaType)).WithDescription(metadataDescription))
		typeMeta := definitions[typeMetaType].Schema
		published.SetProperty("apiVersion", typeMeta.Properties["apiVersion"])
		published.SetProperty("kind", typeMeta.Properties["kind"])
		addEmbeddedProperties(published)
	}
	published.AddExtension("x-kubernetes-group-version-kind", []any{
		map[string]any{"group": crd.Spec.Group, "version": version, "kind": crd.Spec.Names.Kind},
	})
	return published, nil
}

// addEmbeddedProperties is the builder's: every x-kubernetes-embedded-resource
// node gets apiVersion, kind and metadata, and requires kind and apiVersion.
func addEmbeddedProperties(s *spec.Schema) {
	if s == nil {
		return
	}
	for k := range s.Properties {
		v := s.Properties[k]
		addEmbeddedProperties(&v)
		s.Properties[k] = v
	}
	if s.Items != nil {
		addEmbeddedProperties(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		addEmbeddedProperties(s.AdditionalProperties.Schema)
	}
	if embedded, ok := s.VendorExtensible.Extensions.GetBool("x-kubernetes-embedded-resource"); !ok || !embedded {
		return
	}
	typeMeta := definitions[typeMetaType].Schema
	apiVersion, kind := typeMeta.Properties["apiVersion"], typeMeta.Properties["kind"]
	s.SetProperty("apiVersion", *apiVersion.WithDescription(apiVersionDescription))
	s.SetProperty("kind", *kind.WithDescription(kindDescription))
	s.SetProperty("metadata", *spec.RefSchema(refPrefix + common.EscapeJsonPointer(objectMetaType)).WithDescription(metadataDescription))
	required := sets.NewString(s.Required...)
	if !required.Has("kind") {
		s.Required = append(s.Required, "kind")
	}
	if !required.Has("apiVersion") {
		s.Required = append(s.Required, "apiVersion")
	}
}

// populate is a published schema with its references replaced by the
// definitions they name, as the discovery resolver reads it
// (resolver.PopulateRefs).
func populate(published *spec.Schema) (*spec.Schema, error) {
	const root = refPrefix + "root"
	return resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		if ref == root {
			return published, true
		}
		d, ok := definitions[unescapeJSONPointer(strings.TrimPrefix(ref, refPrefix))]
		if !ok {
			return nil, false
		}
		return &d.Schema, true
	}, root)
}

func newCRDResolver(crds []json.RawMessage) (*crdResolver, *meta.DefaultRESTMapper, error) {
	r := &crdResolver{schemas: map[schema.GroupVersionKind]*spec.Schema{}}
	mapper := meta.NewDefaultRESTMapper(nil)
	// ClusterRole is known to the mapper, so that the checker looks its
	// schema up; built-in types' OpenAPI (k8s.io/kubernetes
	// pkg/generated/openapi) is not a published module, so it is not
	// found, and the checker skips the kind as it skips any kind whose
	// schema it cannot resolve.
	mapper.AddSpecific(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
		rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
		rbacv1.SchemeGroupVersion.WithResource("clusterrole"), meta.RESTScopeRoot)
	for _, raw := range crds {
		crd, err := readCRD(raw)
		if err != nil {
			return nil, nil, err
		}
		scope := meta.RESTScopeRoot
		if crd.Spec.Scope == "Namespaced" {
			scope = meta.RESTScopeNamespace
		}
		// Discovery publishes the served versions.
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			mapper.AddSpecific(gvk, gvk.GroupVersion().WithResource(crd.Spec.Names.Plural),
				gvk.GroupVersion().WithResource(crd.Spec.Names.Singular), scope)
			published, err := publishedSchema(crd, v.Name)
			if err != nil {
				return nil, nil, err
			}
			populated, err := populate(published)
			if err != nil {
				return nil, nil, fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
			}
			r.schemas[gvk] = populated
		}
	}
	return r, mapper, nil
}

// ResolveSchema answers with the published schema of a custom resource
// kind, or ErrSchemaNotFound.
func (r *crdResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if s, ok := r.schemas[gvk]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("cannot resolve group version kind %q: %w", gvk, resolver.ErrSchemaNotFound)
}

// typeCheck runs the policy type checker of the API server's
// ValidatingAdmissionPolicy status controller (validating.TypeChecker),
// whose warnings become status.typeChecking.expressionWarnings. It also
// says which matched kinds had a schema to check against (the checker
// skips rules with a wildcard group or version, and kinds it finds no
// schema for).
func (s *server) typeCheck(policy *admissionregistrationv1.ValidatingAdmissionPolicy, crds []json.RawMessage) ([]string, []expressionWarning, error) {
	key := ""
	for _, raw := range crds {
		key += jsonKey(raw)
	}
	cached, ok := s.resolvers[key]
	if !ok {
		r, mapper, err := newCRDResolver(crds)
		if err != nil {
			return nil, nil, err
		}
		cached = &resolved{resolver: r, mapper: mapper}
		s.resolvers[key] = cached
	}
	r, mapper := cached.resolver, cached.mapper
	checker := &validating.TypeChecker{SchemaResolver: r, RestMapper: mapper}
	checked := []string{}
	var rules []admissionregistrationv1.NamedRuleWithOperations
	// A policy without match constraints, which validation refuses, has no
	// kind to check.
	if policy.Spec.MatchConstraints != nil {
		rules = policy.Spec.MatchConstraints.ResourceRules
	}
	for _, rule := range rules {
		for _, group := range rule.APIGroups {
			for _, version := range rule.APIVersions {
				for _, resource := range rule.Resources {
					kinds, err := mapper.KindsFor(schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
					if err != nil {
						continue
					}
					for _, kind := range kinds {
						if _, err := r.ResolveSchema(kind); err == nil {
							checked = append(checked, kind.String())
						}
					}
				}
			}
		}
	}
	sort.Strings(checked)
	return checked, check(checker, policy), nil
}

// check is TypeChecker.Check with its expressions checked at once, each on
// a goroutine (the checker builds an environment with the kind's whole
// declared type for every expression: seconds for a large CRD), and the
// warnings assembled in Check's order and words.
func check(checker *validating.TypeChecker, policy *admissionregistrationv1.ValidatingAdmissionPolicy) []expressionWarning {
	ctx := checker.CreateContext(policy)
	type job struct {
		fieldRef   string
		expression string
		result     validating.TypeCheckingResults
	}
	var jobs []*job
	fieldRef := field.NewPath("spec", "validations")
	for i, v := range policy.Spec.Validations {
		jobs = append(jobs, &job{fieldRef: fieldRef.Index(i).Child("expression").String(), expression: v.Expression})
		if v.MessageExpression != "" {
			jobs = append(jobs, &job{fieldRef: fieldRef.Index(i).Child("messageExpression").String(), expression: v.MessageExpression})
		}
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func(j *job) {
			defer wg.Done()
			j.result = checker.CheckExpression(ctx, j.expression)
		}(j)
	}
	wg.Wait()
	warnings := []expressionWarning{}
	for _, j := range jobs {
		if len(j.result) != 0 {
			warnings = append(warnings, expressionWarning{FieldRef: j.fieldRef, Warning: j.result.String()})
		}
	}
	return warnings
}

// unescapeJSONPointer undoes common.EscapeJsonPointer.
func unescapeJSONPointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
