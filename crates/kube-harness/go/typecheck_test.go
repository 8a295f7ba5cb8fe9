package main

import (
	"encoding/json"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// fooCRD is upstream's test CRD (bar.k8s.io Foo, namespaced), its version v1
// with the given schema (none when empty).
func fooCRD(t *testing.T, schema string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	version := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true}
	if schema != "" {
		props := &apiextensionsv1.JSONSchemaProps{}
		if err := json.Unmarshal([]byte(schema), props); err != nil {
			t.Fatal(err)
		}
		version.Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props}
	}
	return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group:    "bar.k8s.io",
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version},
		Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "foos", Singular: "foo", Kind: "Foo", ListKind: "FooList"},
		Scope:    apiextensionsv1.NamespaceScoped,
	}}
}

// asResolved is a schema as the type checker reads it: apiVersion's, kind's
// and metadata's descriptions wiped (upstream's test wipes them: "We trust
// that they match"), then its references populated.
func asResolved(t *testing.T, s *spec.Schema) *spec.Schema {
	t.Helper()
	for _, name := range []string{"kind", "apiVersion", "metadata"} {
		if prop, ok := s.Properties[name]; ok {
			prop.Description = ""
			s.Properties[name] = prop
		}
	}
	populated, err := populate(s)
	if err != nil {
		t.Fatal(err)
	}
	return populated
}

// publishedSchema is apiextensions-apiserver pkg/controller/openapi/builder
// (generateBuilder, buildKubeNative) for OpenAPI v3. The cases are upstream's
// TestBuildOpenAPIV3 (builder_test.go) without selectable fields (the
// checker does not read them), compared as upstream compares them: the same
// properties, then the whole schema with the metadata descriptions wiped;
// here after its references are populated, as the checker reads it, which
// also reads upstream's allOf-wrapped reference to ObjectMeta as ours.
func TestPublishedSchemaAgreesWithUpstreamCases(t *testing.T) {
	for _, tc := range []struct{ name, schema, wantedSchema string }{
		{"nil", "",
			`{"type":"object","x-kubernetes-group-version-kind":[{"group":"bar.k8s.io","kind":"Foo","version":"v1"}]}`},
		{"with properties",
			`{"type":"object","properties":{"spec":{"type":"object"},"status":{"type":"object"}}}`,
			`{"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},"spec":{"type":"object"},"status":{"type":"object"}},"x-kubernetes-group-version-kind":[{"group":"bar.k8s.io","kind":"Foo","version":"v1"}]}`},
		{"with v3 nullable field",
			`{"type":"object","properties":{"spec":{"type":"object", "nullable": true},"status":{"type":"object"}}}`,
			`{"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},"spec":{"type":"object", "nullable": true},"status":{"type":"object"}},"x-kubernetes-group-version-kind":[{"group":"bar.k8s.io","kind":"Foo","version":"v1"}]}`},
		{"with default not pruned for v3",
			`{"type":"object","properties":{"spec":{"type":"object","properties":{"field":{"type":"string","default":"foo"}}},"status":{"type":"object"}}}`,
			`{"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},"spec":{"type":"object","properties":{"field":{"type":"string","default":"foo"}}},"status":{"type":"object"}},"x-kubernetes-group-version-kind":[{"group":"bar.k8s.io","kind":"Foo","version":"v1"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := publishedSchema(fooCRD(t, tc.schema), "v1")
			if err != nil {
				t.Fatal(err)
			}
			var wanted spec.Schema
			if err := json.Unmarshal([]byte(tc.wantedSchema), &wanted); err != nil {
				t.Fatal(err)
			}
			gotProperties, wantedProperties := sets.StringKeySet(got.Properties), sets.StringKeySet(wanted.Properties)
			if !gotProperties.Equal(wantedProperties) {
				t.Fatalf("properties %v, want %v", gotProperties.List(), wantedProperties.List())
			}
			if g, w := asResolved(t, got), asResolved(t, &wanted); !reflect.DeepEqual(g, w) {
				gj, _ := json.Marshal(g)
				wj, _ := json.Marshal(w)
				t.Fatalf("got\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}

// Not a case of upstream's table: builder.go's addEmbeddedProperties gives
// an x-kubernetes-embedded-resource node apiVersion, kind and metadata, and
// requires the first two, so that the checker types an embedded object's
// metadata as ObjectMeta.
func TestAnEmbeddedResourceIsPublishedWithItsTypeMeta(t *testing.T) {
	got, err := publishedSchema(fooCRD(t, `{"type":"object","properties":{"spec":{"type":"object","properties":{"template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}}}`), "v1")
	if err != nil {
		t.Fatal(err)
	}
	template := got.Properties["spec"].Properties["template"]
	if props := sets.StringKeySet(template.Properties); !props.Equal(sets.NewString("apiVersion", "kind", "metadata")) {
		t.Fatalf("embedded properties %v", props.List())
	}
	if !reflect.DeepEqual(template.Required, []string{"kind", "apiVersion"}) {
		t.Fatalf("embedded required %v", template.Required)
	}
	resolved := asResolved(t, got)
	metadata := resolved.Properties["spec"].Properties["template"].Properties["metadata"]
	if _, ok := metadata.Properties["labels"]; !ok {
		t.Fatalf("embedded metadata is not ObjectMeta: %v", metadata)
	}
}
