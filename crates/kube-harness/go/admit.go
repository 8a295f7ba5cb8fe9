package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

func statusOf(err error) *status {
	var statusErr *apierrors.StatusError
	if errors.As(err, &statusErr) {
		s := statusErr.Status()
		return &status{Message: s.Message, Reason: string(s.Reason), Code: s.Code}
	}
	return &status{Message: err.Error(), Reason: string(metav1.StatusReasonInternalError), Code: 500}
}

// scheme knows the built-in types the policies match (ClusterRole among
// them), as the API server's does.
var scheme = clientgoscheme.Scheme

func (s *server) admit(req *admitRequest) (*admitAnswer, error) {
	review := &admissionv1.AdmissionRequest{}
	if err := json.Unmarshal(req.Request, review); err != nil {
		return nil, fmt.Errorf("request: not an AdmissionRequest: %w", err)
	}
	var crds []*crdSchemas
	for i, raw := range req.CRDs {
		c, err := s.schemas(raw)
		if err != nil {
			return nil, fmt.Errorf("crds[%d]: %w", i, err)
		}
		crds = append(crds, c)
	}
	kind := schema.GroupVersionKind{Group: review.Kind.Group, Version: review.Kind.Version, Kind: review.Kind.Kind}
	resource := schema.GroupVersionResource{Group: review.Resource.Group, Version: review.Resource.Version, Resource: review.Resource.Resource}
	crd := crdFor(crds, kind.GroupKind())
	answer := &admitAnswer{Warnings: []string{}, SchemaWarnings: []string{}, AuditAnnotations: map[string]string{}, Unasked: []string{}, UnknownFields: []string{}}

	// Decode, as the handler decodes the body and the storage decodes the
	// stored object.
	object, unknown, err := decodeObject(review.Object.Raw, kind, crd, false)
	if err != nil {
		refused := fmt.Sprintf("object: %v", err)
		answer.Refused = &refused
		return answer, nil
	}
	answer.UnknownFields = append(answer.UnknownFields, unknown...)
	oldObject, _, err := decodeObject(review.OldObject.Raw, kind, crd, true)
	if err != nil {
		refused := fmt.Sprintf("oldObject: %v", err)
		answer.Refused = &refused
		return answer, nil
	}
	if crd != nil && review.SubResource == "" {
		patchBase(object, oldObject)
	}

	userInfo := &user.DefaultInfo{Name: review.UserInfo.Username, UID: review.UserInfo.UID, Groups: review.UserInfo.Groups}
	if len(review.UserInfo.Extra) > 0 {
		userInfo.Extra = map[string][]string{}
		for k, v := range review.UserInfo.Extra {
			userInfo.Extra[k] = v
		}
	}
	dryRun := review.DryRun != nil && *review.DryRun
	options, err := operationOptions(review)
	if err != nil {
		return nil, err
	}
	attributes := &recordingAttributes{Attributes: admission.NewAttributesRecord(object, oldObject, kind, review.Namespace, review.Name, resource, review.SubResource, admission.Operation(review.Operation), options, dryRun, userInfo), annotations: answer.AuditAnnotations}

	env, err := s.newEnvironment(req, crds, review.Namespace)
	if err != nil {
		return nil, err
	}
	authz := newTableAuthorizer(req.Authorizer)
	chain, err := env.chain(authz)
	if err != nil {
		return nil, err
	}

	// The request's context carries a warning recorder, as the API
	// server's does (k8s.io/apiserver/pkg/warning): every stage below adds
	// to it.
	warnings := &warningRecorder{}
	ctx := warning.WithWarningRecorder(context.Background(), warnings)
	before := deepCopy(object)
	if err := chain.(admission.MutationInterface).Admit(ctx, attributes, env.objectInterfaces); err != nil {
		answer.MutationError = statusOf(err)
	} else {
		mutated := attributes.GetObject()
		answer.Mutated = mutated != nil && !apiequality.Semantic.DeepEqual(before, mutated)
		// Then the storage's BeforeCreate/BeforeUpdate: the strategy
		// prepares the object, validates it, and the validating plugins
		// see the prepared object (registry/generic/registry/store.go).
		if crd != nil && review.SubResource == "" {
			beforeUpdate(mutated, oldObject)
			prepare(crd, mutated, oldObject)
		}
		var schemaErrs field.ErrorList
		if crd != nil && review.SubResource == "" && mutated != nil {
			schemaErrs = crd.validate(ctx, asUnstructured(mutated), asUnstructured(oldObject))
		}
		// What the schema warned about (a rule that fails on a value an
		// UPDATE leaves as stored is ratcheted: a warning, not an error).
		answer.SchemaWarnings = append(answer.SchemaWarnings, warnings.take()...)
		if len(schemaErrs) > 0 {
			answer.SchemaError = statusOf(apierrors.NewInvalid(kind.GroupKind(), review.Name, schemaErrs))
		}
		// A cluster answers a schema refusal without asking the validating
		// policies; they are asked here all the same, so that their verdict
		// on the object can be compared (SchemaError says what the client
		// would read).
		if err := chain.(admission.ValidationInterface).Validate(ctx, attributes, env.objectInterfaces); err != nil {
			answer.Status = statusOf(err)
		} else {
			answer.Allowed = true
		}
	}
	answer.Warnings = append(answer.Warnings, warnings.take()...)

	answer.Object = toJSON(attributes.GetObject())
	answer.OldObject = toJSON(oldObject)
	if crd != nil && answer.Mutated {
		pruned := asUnstructured(attributes.GetObject()).DeepCopy()
		if _, err := crd.decode(pruned, false); err == nil {
			answer.PrunedObject = pruned.Object
		}
	}
	authz.mu.Lock()
	answer.Unasked = append(answer.Unasked, authz.unasked...)
	authz.mu.Unlock()
	return answer, nil
}

func crdFor(crds []*crdSchemas, gk schema.GroupKind) *crdSchemas {
	for _, c := range crds {
		if c.gk == gk {
			return c
		}
	}
	return nil
}

// decodeObject reads one object of the request: a custom resource through
// its CRD's decoder, a built-in type into its Go type as the API server's
// JSON serializer decodes it (unknown fields dropped, wrong types refused).
func decodeObject(raw []byte, kind schema.GroupVersionKind, crd *crdSchemas, stored bool) (runtime.Object, []string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	if crd != nil {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, nil, err
		}
		unknown, err := crd.decode(u, stored)
		if err != nil {
			return nil, nil, err
		}
		return u, unknown, nil
	}
	if !scheme.Recognizes(kind) {
		return nil, nil, fmt.Errorf("%s is neither a built-in type nor served by a CRD given", kind)
	}
	serializer := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme, jsonserializer.SerializerOptions{})
	into, err := scheme.New(kind)
	if err != nil {
		return nil, nil, err
	}
	obj, _, err := serializer.Decode(raw, &kind, into)
	if err != nil {
		return nil, nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(kind)
	return obj, nil, nil
}

// patchBase gives an UPDATE's object the stored object's resourceVersion
// and generation when it has none. A client's update (a patch, an apply)
// starts from the stored object, so the object admission sees carries them;
// scenario fixtures often leave them out of both objects, so a stored object
// without a resourceVersion is given "1", as any stored object has one.
func patchBase(object, oldObject runtime.Object) {
	obj, old := asUnstructured(object), asUnstructured(oldObject)
	if obj == nil || old == nil {
		return
	}
	if old.GetResourceVersion() == "" {
		old.SetResourceVersion("1")
	}
	if obj.GetResourceVersion() == "" {
		obj.SetResourceVersion(old.GetResourceVersion())
	}
	if obj.GetGeneration() == 0 {
		obj.SetGeneration(old.GetGeneration())
	}
}

// beforeUpdate is rest.BeforeUpdate's first step on an update's object
// (k8s.io/apiserver pkg/registry/rest/update.go): a request cannot set the
// generation, which starts from the stored object's before the strategy
// counts the change.
func beforeUpdate(object, oldObject runtime.Object) {
	obj, old := asUnstructured(object), asUnstructured(oldObject)
	if obj == nil || old == nil {
		return
	}
	obj.SetGeneration(old.GetGeneration())
}

// prepare is customResourceStrategy.PrepareForCreate and PrepareForUpdate:
// a version with a status subresource takes no status from a write of the
// main resource, and the generation counts spec changes.
func prepare(crd *crdSchemas, object, oldObject runtime.Object) {
	obj := asUnstructured(object)
	if obj == nil {
		return
	}
	hasStatus := false
	for _, v := range crd.crd.Spec.Versions {
		if v.Name == obj.GroupVersionKind().Version && v.Subresources != nil && v.Subresources.Status != nil {
			hasStatus = true
		}
	}
	old := asUnstructured(oldObject)
	if old == nil {
		if hasStatus {
			delete(obj.Object, "status")
		}
		obj.SetGeneration(1)
		return
	}
	if hasStatus {
		if oldStatus, ok := old.Object["status"]; ok {
			obj.Object["status"] = oldStatus
		} else {
			delete(obj.Object, "status")
		}
	}
	if !apiequality.Semantic.DeepEqual(withoutMetadata(obj.Object), withoutMetadata(old.Object)) {
		obj.SetGeneration(old.GetGeneration() + 1)
	}
}

func withoutMetadata(object map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range object {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

func asUnstructured(obj runtime.Object) *unstructured.Unstructured {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u
	}
	return nil
}

// toJSON is the object as the API server would serialize it.
func toJSON(obj runtime.Object) any {
	if obj == nil {
		return nil
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Sprintf("cannot serialize: %v", err)
	}
	return out
}

// operationOptions decodes the request's options (CreateOptions,
// UpdateOptions, DeleteOptions) as the API server passes them to
// admission.
func operationOptions(review *admissionv1.AdmissionRequest) (runtime.Object, error) {
	var options runtime.Object
	switch review.Operation {
	case admissionv1.Create:
		options = &metav1.CreateOptions{}
	case admissionv1.Update:
		options = &metav1.UpdateOptions{}
	case admissionv1.Delete:
		options = &metav1.DeleteOptions{}
	default:
		return nil, nil
	}
	if len(review.Options.Raw) > 0 {
		if err := json.Unmarshal(review.Options.Raw, options); err != nil {
			return nil, fmt.Errorf("request.options: %w", err)
		}
	}
	return options, nil
}

// warningRecorder is the API server's warning recorder
// (k8s.io/apiserver endpoints/filters/warning.go, recorder.AddWarning) as
// far as what a client reads: an empty text is dropped, each text is kept
// once, in order, and a text or agent that cannot be a Warning header
// (net.NewWarningHeader: control characters, an agent with spaces) is
// dropped. That package needs k8s.io/streaming, which the admission code
// does not; its 4,096-character cut of the total is left to the caller.
type warningRecorder struct {
	mu       sync.Mutex
	recorded map[string]bool
	texts    []string
}

func (w *warningRecorder) AddWarning(agent, text string) {
	if text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.recorded == nil {
		w.recorded = map[string]bool{}
	}
	if w.recorded[text] {
		return
	}
	w.recorded[text] = true
	if _, err := utilnet.NewWarningHeader(299, agent, text); err != nil {
		return
	}
	w.texts = append(w.texts, text)
}

// take returns the warnings recorded so far and starts again: the schema's
// warnings and the validating policies' are answered apart.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	texts := w.texts
	w.texts, w.recorded = nil, nil
	return texts
}

func deepCopy(obj runtime.Object) runtime.Object {
	if obj == nil {
		return nil
	}
	return obj.DeepCopyObject()
}

// recordingAttributes keeps the audit annotations the policies add.
type recordingAttributes struct {
	admission.Attributes
	annotations map[string]string
}

func (r *recordingAttributes) AddAnnotation(key, value string) error {
	if err := r.Attributes.AddAnnotation(key, value); err != nil {
		return err
	}
	r.annotations[key] = value
	return nil
}
