package main

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// asServed gives a CRD read from a file the status a cluster that serves
// it holds: its names accepted, Established, its storage version stored.
// The API server keeps the stored status on a spec update.
func asServed(crd *apiextensionsv1.CustomResourceDefinition) {
	if crd.ResourceVersion == "" {
		crd.ResourceVersion = "1"
	}
	if len(crd.Status.StoredVersions) == 0 {
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
			}
		}
	}
	if crd.Status.AcceptedNames.Plural == "" {
		crd.Status.AcceptedNames = crd.Spec.Names
	}
	if len(crd.Status.Conditions) == 0 {
		for _, c := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.Established, apiextensionsv1.NamesAccepted} {
			crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: c, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"})
		}
	}
}

func (s *server) crdUpdate(req *crdUpdateRequest) (*crdUpdateAnswer, error) {
	oldCRD, err := readCRD(req.Old)
	if err != nil {
		return nil, fmt.Errorf("old: %w", err)
	}
	newCRD, err := readCRD(req.New)
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	asServed(oldCRD)
	newCRD.Status = oldCRD.Status
	newCRD.ResourceVersion = oldCRD.ResourceVersion
	oldInternal, err := internalCRD(oldCRD)
	if err != nil {
		return nil, err
	}
	newInternal, err := internalCRD(newCRD)
	if err != nil {
		return nil, err
	}
	answer := &crdUpdateAnswer{RuleErrors: map[string][]string{}}
	answer.Errors = errorStrings(apiextensionsvalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), newInternal, oldInternal))
	for _, v := range req.Versions {
		parsed, err := version.ParseMajorMinor(v)
		if err != nil {
			return nil, fmt.Errorf("version %q: %w", v, err)
		}
		count, errs, err := compileRules(newCRD, environment.MustBaseEnvSet(parsed))
		if err != nil {
			return nil, err
		}
		answer.Rules = count
		answer.RuleErrors[v] = errs
	}
	return answer, nil
}

// compileRules compiles every x-kubernetes-validations rule of every
// version's schema, node by node as the CRD validation does
// (cel.Compile with the node's declared type), as new expressions of
// envSet's compatibility version.
func compileRules(crd *apiextensionsv1.CustomResourceDefinition, envSet *environment.EnvSet) (int, []string, error) {
	count := 0
	errs := []string{}
	for _, v := range crd.Spec.Versions {
		val, err := apihelpers.GetSchemaForVersion(crd, v.Name)
		if err != nil || val == nil {
			continue
		}
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
			return 0, nil, err
		}
		structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return 0, nil, fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
		}
		var walk func(node *structuralschema.Structural, path string, root bool) error
		walk = func(node *structuralschema.Structural, path string, root bool) error {
			if len(node.XValidations) > 0 {
				results, err := cel.Compile(node, model.SchemaDeclType(node, root), celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				for i, r := range results {
					count++
					if r.Error != nil {
						errs = append(errs, fmt.Sprintf("%s %s x-kubernetes-validations[%d] (%s): %s", v.Name, path, i, node.XValidations[i].Rule, r.Error.Detail))
					}
					if r.MessageExpressionError != nil {
						errs = append(errs, fmt.Sprintf("%s %s x-kubernetes-validations[%d].messageExpression: %s", v.Name, path, i, r.MessageExpressionError.Detail))
					}
				}
			}
			names := make([]string, 0, len(node.Properties))
			for name := range node.Properties {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				child := node.Properties[name]
				if err := walk(&child, path+"."+name, false); err != nil {
					return err
				}
			}
			if node.Items != nil {
				if err := walk(node.Items, path+"[*]", false); err != nil {
					return err
				}
			}
			if node.AdditionalProperties != nil && node.AdditionalProperties.Structural != nil {
				if err := walk(node.AdditionalProperties.Structural, path+"[*]", false); err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(structural, "", true); err != nil {
			return 0, nil, err
		}
	}
	return count, errs, nil
}
