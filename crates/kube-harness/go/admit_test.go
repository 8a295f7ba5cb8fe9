package main

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// crdWithStatus is a CRD whose version v1 has the status subresource or
// not, as prepare reads it.
func crdWithStatus(status bool) *crdSchemas {
	version := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true}
	if status {
		version.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	return &crdSchemas{crd: &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version},
	}}}
}

// object is a custom resource of that CRD's version with the given fields.
func object(fields map[string]any) *unstructured.Unstructured {
	content := map[string]any{"apiVersion": "example.com/v1", "kind": "Example"}
	for k, v := range fields {
		content[k] = v
	}
	return &unstructured.Unstructured{Object: content}
}

func generation(n int64) map[string]any { return map[string]any{"generation": n} }

// prepare is apiextensions-apiserver pkg/registry/customresource/strategy.go,
// customResourceStrategy.PrepareForUpdate (and PrepareForCreate). The update
// cases are upstream's TestStrategyPrepareForUpdate (strategy_test.go), each
// object given the apiVersion of a CRD version with or without the status
// subresource (upstream sets the strategy's status instead).
func TestPrepareForUpdateAgreesWithUpstreamCases(t *testing.T) {
	for _, tc := range []struct {
		name          string
		statusEnabled bool
		old, obj      map[string]any
		expected      map[string]any
	}{
		{"/status is enabled, spec changes increment generation", true,
			map[string]any{"metadata": generation(1), "spec": "old", "status": "old"},
			map[string]any{"metadata": generation(1), "spec": "new", "status": "old"},
			map[string]any{"metadata": generation(2), "spec": "new", "status": "old"}},
		{"/status is enabled, status changes do not increment generation, status changes removed", true,
			map[string]any{"metadata": generation(1), "spec": "old", "status": "old"},
			map[string]any{"metadata": generation(1), "spec": "old", "status": "new"},
			map[string]any{"metadata": generation(1), "spec": "old", "status": "old"}},
		{"/status is enabled, metadata changes do not increment generation", true,
			map[string]any{"metadata": map[string]any{"generation": int64(1), "other": "old"}, "spec": "old", "status": "old"},
			map[string]any{"metadata": map[string]any{"generation": int64(1), "other": "new"}, "spec": "old", "status": "old"},
			map[string]any{"metadata": map[string]any{"generation": int64(1), "other": "new"}, "spec": "old", "status": "old"}},
		{"/status is disabled, spec changes increment generation", false,
			map[string]any{"metadata": generation(1), "spec": "old", "status": "old"},
			map[string]any{"metadata": generation(1), "spec": "new", "status": "old"},
			map[string]any{"metadata": generation(2), "spec": "new", "status": "old"}},
		{"/status is disabled, status changes increment generation", false,
			map[string]any{"metadata": generation(1), "spec": "old", "status": "old"},
			map[string]any{"metadata": generation(1), "spec": "old", "status": "new"},
			map[string]any{"metadata": generation(2), "spec": "old", "status": "new"}},
		{"/status is disabled, other top-level field changes increment generation", false,
			map[string]any{"metadata": generation(1), "spec": "old", "image": "old", "status": "old"},
			map[string]any{"metadata": generation(1), "spec": "old", "image": "new", "status": "old"},
			map[string]any{"metadata": generation(2), "spec": "old", "image": "new", "status": "old"}},
		{"/status is disabled, metadata changes do not increment generation", false,
			map[string]any{"metadata": map[string]any{"generation": int64(1), "other": "old"}, "spec": "old", "status": "old"},
			map[string]any{"metadata": map[string]any{"generation": int64(1), "other": "new"}, "spec": "old", "status": "old"},
			map[string]any{"metadata": map[string]any{"generation": int64(1), "other": "new"}, "spec": "old", "status": "old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(tc.obj)
			prepare(crdWithStatus(tc.statusEnabled), obj, object(tc.old))
			if want := object(tc.expected); !reflect.DeepEqual(obj, want) {
				t.Fatalf("got %v, want %v", obj.Object, want.Object)
			}
		})
	}
}

// PrepareForCreate has no table upstream; these cases follow the function:
// the status of a version with the status subresource is dropped, and the
// generation is 1.
func TestPrepareForCreate(t *testing.T) {
	for _, status := range []bool{true, false} {
		obj := object(map[string]any{"metadata": generation(7), "spec": "new", "status": "new"})
		prepare(crdWithStatus(status), obj, nil)
		want := map[string]any{"metadata": generation(1), "spec": "new"}
		if !status {
			want["status"] = "new"
		}
		if w := object(want); !reflect.DeepEqual(obj, w) {
			t.Fatalf("status subresource %v: got %v, want %v", status, obj.Object, w.Object)
		}
	}
}

// beforeUpdate is rest.BeforeUpdate's "requests cannot update generation"
// (k8s.io/apiserver pkg/registry/rest/update.go): the stored generation is
// the one the strategy counts from, whatever the request said.
func TestARequestCannotSetTheGeneration(t *testing.T) {
	obj := object(map[string]any{"metadata": generation(9), "spec": "old"})
	beforeUpdate(obj, object(map[string]any{"metadata": generation(3), "spec": "old"}))
	prepare(crdWithStatus(false), obj, object(map[string]any{"metadata": generation(3), "spec": "old"}))
	if got := obj.GetGeneration(); got != 3 {
		t.Fatalf("generation %d, want the stored 3 (nothing but metadata changed)", got)
	}
}

// patchBase is what a client's update carries of the stored object
// (upstream has no table for it): its resourceVersion and generation when
// the request's object has none, "1" for a stored object written without
// one, and the request's own when it has them.
func TestPatchBase(t *testing.T) {
	for _, tc := range []struct {
		name           string
		obj, old       map[string]any
		rv, oldRV      string
		generation     int64
		wantGeneration int64
	}{
		{"from the stored object", map[string]any{}, map[string]any{"resourceVersion": "42", "generation": int64(3)}, "42", "42", 0, 3},
		{"a stored object without a resourceVersion", map[string]any{}, map[string]any{}, "1", "1", 0, 0},
		{"the request's own", map[string]any{"resourceVersion": "40", "generation": int64(2)}, map[string]any{"resourceVersion": "42", "generation": int64(3)}, "40", "42", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(map[string]any{"metadata": tc.obj})
			old := object(map[string]any{"metadata": tc.old})
			patchBase(obj, old)
			if obj.GetResourceVersion() != tc.rv || old.GetResourceVersion() != tc.oldRV || obj.GetGeneration() != tc.wantGeneration {
				t.Fatalf("resourceVersion %q (stored %q), generation %d; want %q (%q), %d",
					obj.GetResourceVersion(), old.GetResourceVersion(), obj.GetGeneration(), tc.rv, tc.oldRV, tc.wantGeneration)
			}
		})
	}
}

// The warning recorder keeps what upstream's recorder writes as Warning
// headers: the cases are Test_recorder_AddWarning
// (k8s.io/apiserver pkg/endpoints/filters/warning_test.go), its expected
// headers read as the texts they carry.
func TestWarningRecorderAgreesWithUpstreamCases(t *testing.T) {
	type args struct{ agent, text string }
	for _, tc := range []struct {
		name   string
		args   []args
		expect []string
	}{
		{"empty", nil, nil},
		{"empty values", []args{{"", ""}}, nil},
		{"empty agent", []args{{"", "mytext"}}, []string{"mytext"}},
		{"simple", []args{{"myagent", "mytext"}}, []string{"mytext"}},
		{"duplicate text", []args{{"myagent", "mytext"}, {"myagent2", "mytext"}}, []string{"mytext"}},
		{"multiple", []args{{"", "mytext1"}, {"", "mytext2"}, {"", "mytext3"}}, []string{"mytext1", "mytext2", "mytext3"}},
		{"invalid agent", []args{{"my agent", "mytext"}}, nil},
		{"invalid text", []args{{"myagent", "my\ntext"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recorder := &warningRecorder{}
			for _, a := range tc.args {
				recorder.AddWarning(a.agent, a.text)
			}
			if got := recorder.take(); !reflect.DeepEqual(got, tc.expect) {
				t.Fatalf("got %#v, want %#v", got, tc.expect)
			}
		})
	}
}
