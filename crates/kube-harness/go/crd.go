package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// crdSchemas is what a custom resource's handler in the API server builds
// from its CRD (apiextensions-apiserver pkg/apiserver/customresource_handler.go,
// getOrCreateServingInfoFor): per served version the structural schema with
// its defaults pruned, the OpenAPI schema validator and the validator of the
// x-kubernetes-validations rules.
type crdSchemas struct {
	crd        *apiextensionsv1.CustomResourceDefinition
	gk         schema.GroupKind
	resource   string
	namespaced bool
	versions   map[string]*versionSchemas
}

type versionSchemas struct {
	structural *structuralschema.Structural
	validator  apiextensionsvalidation.SchemaValidator
	cel        *cel.Validator
}

// jsonKey is the cache key of a document: the hash of its JSON.
func jsonKey(raw []byte) string {
	sum := sha256.Sum256(raw)
	return string(sum[:])
}

// readCRD reads a CustomResourceDefinition as the API server stores one:
// apiextensions.k8s.io/v1 with its defaults set.
func readCRD(raw json.RawMessage) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(raw, crd); err != nil {
		return nil, fmt.Errorf("not a CustomResourceDefinition: %w", err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	return crd, nil
}

// internalCRD converts a v1 CRD to the internal version the API server's
// CRD validation reads.
func internalCRD(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, out, nil); err != nil {
		return nil, fmt.Errorf("cannot convert %s to the internal version: %w", crd.Name, err)
	}
	return out, nil
}

// schemas returns the serving schemas of a CRD, built once per CRD.
func (s *server) schemas(raw json.RawMessage) (*crdSchemas, error) {
	key := jsonKey(raw)
	if cached, ok := s.crds[key]; ok {
		return cached, nil
	}
	crd, err := readCRD(raw)
	if err != nil {
		return nil, err
	}
	built := &crdSchemas{
		crd:        crd,
		gk:         schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind},
		resource:   crd.Spec.Names.Plural,
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		versions:   map[string]*versionSchemas{},
	}
	for _, v := range crd.Spec.Versions {
		val, err := apihelpers.GetSchemaForVersion(crd, v.Name)
		if err != nil {
			return nil, err
		}
		if val == nil {
			continue
		}
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return nil, fmt.Errorf("%s version %s: cannot convert its schema: %w", crd.Name, v.Name, err)
		}
		structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("%s version %s: not a structural schema: %w", crd.Name, v.Name, err)
		}
		structural = structural.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(structural); err != nil {
			return nil, fmt.Errorf("%s version %s: cannot prune its defaults: %w", crd.Name, v.Name, err)
		}
		validator, _, err := apiextensionsvalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("%s version %s: no schema validator: %w", crd.Name, v.Name, err)
		}
		built.versions[v.Name] = &versionSchemas{
			structural: structural,
			validator:  validator,
			// customresource.NewStrategy: CEL programs are compiled here,
			// once, with the per-call limit.
			cel: cel.NewValidator(structural, true, celconfig.PerCallLimit),
		}
	}
	s.crds[key] = built
	return built, nil
}

// decode applies to a custom resource what the handler's decoder applies
// to a request body (unstructuredSchemaCoercer.apply, then
// unstructuredDefaulter): unknown fields pruned, nulls of non-nullable
// fields without a default dropped, metadata coerced, then defaults set.
// stored selects the storage decoder's options (malformed metadata
// dropped, a missing generation repaired), as an UPDATE's old object is
// read from etcd. It returns the paths of the fields pruned, which the API
// server reports as warnings ("unknown field").
func (c *crdSchemas) decode(u *unstructured.Unstructured, stored bool) ([]string, error) {
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	v, ok := c.versions[gv.Version]
	if !ok || gv.Group != c.gk.Group || u.GetKind() != c.gk.Kind {
		return nil, fmt.Errorf("%s is not served by the %s CRD", u.GroupVersionKind(), c.crd.Name)
	}
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	objectMeta, foundObjectMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields:     stored,
		ReturnUnknownFieldPaths: true,
	})
	if err != nil {
		return nil, err
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, v.structural)
	coerceErr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, v.structural, false, schemaobjectmeta.CoerceOptions{
		DropInvalidFields:       stored,
		ReturnUnknownFieldPaths: true,
	})
	if coerceErr != nil {
		return nil, coerceErr
	}
	unknown = append(unknown, paths...)
	if stored && objectMeta.Generation == 0 {
		objectMeta.Generation = 1
	}
	u.SetKind(kind)
	u.SetAPIVersion(apiVersion)
	if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	structuraldefaulting.Default(u.Object, v.structural)
	return unknown, nil
}

// validate is customResourceStrategy.Validate and ValidateUpdate
// (apiextensions-apiserver pkg/registry/customresource/strategy.go, whose
// package cannot be imported without etcd's client, which the admission
// code does not need): metadata, the OpenAPI schema (ratcheting on
// UPDATE, CRDValidationRatcheting being GA), embedded objects, list types,
// and the x-kubernetes-validations rules with the runtime cost budget,
// skipped when a blocking schema error was found.
func (c *crdSchemas) validate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("apiVersion"), obj.GetAPIVersion(), err.Error())}
	}
	v, ok := c.versions[gv.Version]
	if !ok {
		return field.ErrorList{field.Invalid(field.NewPath("apiVersion"), obj.GetAPIVersion(), "not served")}
	}
	var errs field.ErrorList
	if old == nil {
		errs = append(errs, validation.ValidateObjectMetaAccessor(obj, c.namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
		errs = append(errs, apiextensionsvalidation.ValidateCustomResource(nil, obj.UnstructuredContent(), v.validator)...)
		errs = append(errs, schemaobjectmeta.Validate(nil, obj.Object, v.structural, false)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj.Object)...)
		if has, blocking := hasBlockingErr(errs); has {
			return append(errs, blocking)
		}
		celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj.Object, nil, celconfig.RuntimeCELCostBudget)
		return append(errs, celErrs...)
	}
	correlated := common.NewCorrelatedObject(obj.Object, old.Object, &model.Structural{Structural: v.structural})
	errs = append(errs, validation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))...)
	errs = append(errs, apiextensionsvalidation.ValidateCustomResourceUpdate(nil, obj.UnstructuredContent(), old.UnstructuredContent(), v.validator, apiextensionsvalidation.WithRatcheting(correlated))...)
	errs = append(errs, schemaobjectmeta.Validate(nil, obj.Object, v.structural, false)...)
	if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, v.structural, old.Object); len(oldErrs) == 0 {
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj.Object)...)
	}
	if has, blocking := hasBlockingErr(errs); has {
		return append(errs, blocking)
	}
	celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj.Object, old.Object, celconfig.RuntimeCELCostBudget, cel.WithRatcheting(correlated))
	return append(errs, celErrs...)
}

// hasBlockingErr is the strategy's own: OpenAPI type, required, enum,
// length and count failures stop the CEL rules from running.
func hasBlockingErr(errs field.ErrorList) (bool, *field.Error) {
	for _, err := range errs {
		if err.Type == field.ErrorTypeNotSupported || err.Type == field.ErrorTypeRequired || err.Type == field.ErrorTypeTooLong || err.Type == field.ErrorTypeTooMany || err.Type == field.ErrorTypeTypeInvalid {
			return true, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return false, nil
}
