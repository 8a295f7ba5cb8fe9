package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// admissionEnv is what the admission plugins of an API server hold for one
// request: the policies and bindings with their compiled evaluators (as
// the policy source keeps them), the params and namespaces (as its
// informers hold them), and the object interfaces of the request's kind.
type admissionEnv struct {
	validatingHooks  []validating.PolicyHook
	mutatingHooks    []mutating.PolicyHook
	namespaces       corev1listers.NamespaceLister
	objectInterfaces admission.ObjectInterfaces
	crds             []*crdSchemas
}

func (s *server) newEnvironment(req *admitRequest, crds []*crdSchemas, requestNamespace string) (*admissionEnv, error) {
	env := &admissionEnv{crds: crds}
	env.objectInterfaces = &objectInterfaces{
		RuntimeObjectInterfaces: admission.NewObjectInterfacesFromScheme(scheme).(*admission.RuntimeObjectInterfaces),
		crds:                    crds,
	}

	// The cluster's objects, by kind, as informers would list them.
	objects := map[schema.GroupVersionKind][]*unstructured.Unstructured{}
	namespaces := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for i, raw := range req.Objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("objects[%d]: %w", i, err)
		}
		gvk := u.GroupVersionKind()
		if gvk.Group == "" && gvk.Kind == "Namespace" {
			ns := &corev1.Namespace{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ns); err != nil {
				return nil, fmt.Errorf("objects[%d]: %w", i, err)
			}
			_ = namespaces.Add(ns)
			continue
		}
		// Stored custom resources are read through their CRD's storage
		// decoder, pruned and defaulted.
		if c := crdFor(crds, gvk.GroupKind()); c != nil {
			if _, err := c.decode(u, true); err != nil {
				return nil, fmt.Errorf("objects[%d] (%s %s): %w", i, gvk.Kind, u.GetName(), err)
			}
		}
		objects[gvk] = append(objects[gvk], u)
	}
	// A request in a namespace implies the namespace exists (the API
	// server's NamespaceLifecycle admission refuses others); a snapshot
	// that does not list it gets a bare one, with no labels.
	if requestNamespace != "" {
		if _, exists, _ := namespaces.GetByKey(requestNamespace); !exists {
			_ = namespaces.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: requestNamespace}})
		}
	}
	env.namespaces = corev1listers.NewNamespaceLister(namespaces)

	bindingsFor := func(raws []json.RawMessage, read func(json.RawMessage) (string, any, error)) (map[string][]any, error) {
		out := map[string][]any{}
		for i, raw := range raws {
			policyName, binding, err := read(raw)
			if err != nil {
				return nil, fmt.Errorf("binding %d: %w", i, err)
			}
			out[policyName] = append(out[policyName], binding)
		}
		return out, nil
	}

	vBindings, err := bindingsFor(req.ValidatingBindings, func(raw json.RawMessage) (string, any, error) {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := strictUnmarshal(raw, b); err != nil {
			return "", nil, err
		}
		return b.Spec.PolicyName, b, nil
	})
	if err != nil {
		return nil, err
	}
	for i, raw := range req.ValidatingPolicies {
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := strictUnmarshal(raw, policy); err != nil {
			return nil, fmt.Errorf("validatingPolicies[%d]: %w", i, err)
		}
		setVAPDefaults(policy)
		bindings := vBindings[policy.Name]
		if len(bindings) == 0 {
			continue
		}
		hook := validating.PolicyHook{Policy: policy, Evaluator: s.validator(raw, policy)}
		for _, b := range bindings {
			binding := b.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
			setBindingDefaults(binding.Spec.MatchResources)
			hook.Bindings = append(hook.Bindings, binding)
		}
		hook.ParamInformer, hook.ParamScope, hook.ConfigurationError = paramsFor(policy.Spec.ParamKind, objects, crds)
		env.validatingHooks = append(env.validatingHooks, hook)
	}

	mBindings, err := bindingsFor(req.MutatingBindings, func(raw json.RawMessage) (string, any, error) {
		b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		if err := strictUnmarshal(raw, b); err != nil {
			return "", nil, err
		}
		return b.Spec.PolicyName, b, nil
	})
	if err != nil {
		return nil, err
	}
	for i, raw := range req.MutatingPolicies {
		policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
		if err := strictUnmarshal(raw, policy); err != nil {
			return nil, fmt.Errorf("mutatingPolicies[%d]: %w", i, err)
		}
		setMAPDefaults(policy)
		bindings := mBindings[policy.Name]
		if len(bindings) == 0 {
			continue
		}
		hook := mutating.PolicyHook{Policy: policy, Evaluator: s.mutator(raw, policy)}
		for _, b := range bindings {
			binding := b.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
			setBindingDefaults(binding.Spec.MatchResources)
			hook.Bindings = append(hook.Bindings, binding)
		}
		hook.ParamInformer, hook.ParamScope, hook.ConfigurationError = paramsFor(policy.Spec.ParamKind, objects, crds)
		env.mutatingHooks = append(env.mutatingHooks, hook)
	}
	return env, nil
}

// chain builds the admission chain of the two policy plugins, mutating
// then validating, with the API server's own plugin registry: the handler
// it returns reinvokes the mutating plugins once when a mutation asks for
// it (admission.Plugins.NewFromPlugins, reinvocation.go).
func (env *admissionEnv) chain(authz authorizer.Authorizer) (admission.Interface, error) {
	matcher := matching.NewMatcher(env.namespaces, nil)
	validatingDispatcher := validating.NewDispatcher(authz, generic.NewPolicyMatcher(matcher))
	mutatingDispatcher := mutating.NewDispatcher(authz, matcher, &typeConverters{})
	plugins := admission.NewPlugins()
	plugins.Register(mutating.PluginName, func(io.Reader) (admission.Interface, error) {
		return &policyPlugin{
			Handler: admission.NewHandler(admission.Connect, admission.Create, admission.Delete, admission.Update),
			admit: func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
				return mutatingDispatcher.Dispatch(ctx, a, o, env.mutatingHooks)
			},
		}, nil
	})
	plugins.Register(validating.PluginName, func(io.Reader) (admission.Interface, error) {
		return &policyPlugin{
			Handler: admission.NewHandler(admission.Connect, admission.Create, admission.Delete, admission.Update),
			validate: func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
				return validatingDispatcher.Dispatch(ctx, a, o, env.validatingHooks)
			},
		}, nil
	})
	return plugins.NewFromPlugins([]string{mutating.PluginName, validating.PluginName}, noConfig{}, noInitializer{}, nil)
}

// policyPlugin is the part of the policy plugins (generic.Plugin.Dispatch)
// that hands a request and the source's hooks to the dispatcher; the
// source, which watches policies through informers, is what environment
// holds.
type policyPlugin struct {
	*admission.Handler
	admit    func(context.Context, admission.Attributes, admission.ObjectInterfaces) error
	validate func(context.Context, admission.Attributes, admission.ObjectInterfaces) error
}

func (p *policyPlugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if p.admit == nil || !p.Handles(a.GetOperation()) {
		return nil
	}
	return p.admit(ctx, a, o)
}

func (p *policyPlugin) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if p.validate == nil || !p.Handles(a.GetOperation()) {
		return nil
	}
	return p.validate(ctx, a, o)
}

type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

type noInitializer struct{}

func (noInitializer) Initialize(admission.Interface) {}

// objectInterfaces are the request scope's: the scheme for built-in
// types, and for a custom resource the CRD's structural defaulting after a
// mutation (customresource_handler.go, unstructuredDefaulter).
type objectInterfaces struct {
	*admission.RuntimeObjectInterfaces
	crds []*crdSchemas
}

func (o *objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return o }

func (o *objectInterfaces) Default(in runtime.Object) {
	if u, ok := in.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		if c := crdFor(o.crds, gvk.GroupKind()); c != nil {
			if v, ok := c.versions[gvk.Version]; ok {
				structuraldefault(u, v)
				return
			}
		}
	}
	scheme.Default(in)
}

// typeConverters answers the mutating dispatcher's question for a type
// converter. The API server's (patch.NewTypeConverterManager) builds one
// from the OpenAPI document of the kind, which only ApplyConfiguration
// patches read; the generated policies use JSONPatch, whose patcher does
// not (mutating/patch/json_patch.go), so a deduced converter serves.
type typeConverters struct{}

func (*typeConverters) Run(context.Context) {}

func (*typeConverters) GetTypeConverter(schema.GroupVersionKind) managedfields.TypeConverter {
	return managedfields.NewDeducedTypeConverter()
}

// paramsFor is the policy source's param informer for a paramKind
// (ensureParamsForPolicyLocked): a lister over the cluster's objects of
// that kind, and the kind's scope.
func paramsFor(kind *admissionregistrationv1.ParamKind, objects map[schema.GroupVersionKind][]*unstructured.Unstructured, crds []*crdSchemas) (informers.GenericInformer, meta.RESTScope, error) {
	if kind == nil {
		return nil, nil, nil
	}
	gv, err := schema.ParseGroupVersion(kind.APIVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
	}
	gvk := gv.WithKind(kind.Kind)
	c := crdFor(crds, gvk.GroupKind())
	if c == nil {
		return nil, nil, fmt.Errorf("paramKind %s: no CRD given for it", gvk)
	}
	scope := meta.RESTScopeRoot
	if c.namespaced {
		scope = meta.RESTScopeNamespace
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objects[gvk] {
		if err := indexer.Add(o); err != nil {
			return nil, nil, err
		}
	}
	return &paramInformer{lister: cache.NewGenericLister(indexer, gv.WithResource(c.resource).GroupResource())}, scope, nil
}

// paramInformer is a synced informer's lister.
type paramInformer struct {
	lister cache.GenericLister
}

func (p *paramInformer) Informer() cache.SharedIndexInformer { return syncedInformer{} }
func (p *paramInformer) Lister() cache.GenericLister         { return p.lister }

// syncedInformer is an informer whose initial list is done: CollectParams
// only asks HasSynced.
type syncedInformer struct{ cache.SharedIndexInformer }

func (syncedInformer) HasSynced() bool { return true }
