package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func (a authzAnswer) key() string {
	groups := append([]string(nil), a.Groups...)
	sort.Strings(groups)
	return strings.Join([]string{a.User, strings.Join(groups, ","), a.Verb, a.Namespace, a.APIGroup, a.Resource, a.Subresource, a.Name, a.Path}, "\x00")
}

// tableAuthorizer answers checks from the table. A check the table does
// not hold is answered with an error and recorded: the caller fails the
// case, since Kubernetes asked what olm-guard's evaluation never did.
type tableAuthorizer struct {
	answers map[string]authzAnswer
	mu      sync.Mutex
	unasked []string
}

func newTableAuthorizer(answers []authzAnswer) *tableAuthorizer {
	t := &tableAuthorizer{answers: map[string]authzAnswer{}}
	for _, a := range answers {
		t.answers[a.key()] = a
	}
	return t
}

var errUnasked = errors.New("olm-guard's evaluation of this request made no such check")

func (t *tableAuthorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	question := authzAnswer{Verb: attrs.GetVerb()}
	if u := attrs.GetUser(); u != nil {
		question.User = u.GetName()
		question.Groups = u.GetGroups()
	}
	if attrs.IsResourceRequest() {
		question.Namespace = attrs.GetNamespace()
		question.APIGroup = attrs.GetAPIGroup()
		question.Resource = attrs.GetResource()
		question.Subresource = attrs.GetSubresource()
		question.Name = attrs.GetName()
	} else {
		question.Path = attrs.GetPath()
	}
	answer, ok := t.answers[question.key()]
	if !ok {
		t.mu.Lock()
		t.unasked = append(t.unasked, describeCheck(question))
		t.mu.Unlock()
		return authorizer.DecisionNoOpinion, "", errUnasked
	}
	if answer.Error != "" {
		return authorizer.DecisionNoOpinion, "", errors.New(answer.Error)
	}
	if answer.Allowed {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func describeCheck(q authzAnswer) string {
	if q.Path != "" {
		return fmt.Sprintf("may %q (groups %v) %s the non-resource URL %s", q.User, q.Groups, q.Verb, q.Path)
	}
	return fmt.Sprintf("may %q (groups %v) %s group %q resource %q subresource %q name %q in namespace %q",
		q.User, q.Groups, q.Verb, q.APIGroup, q.Resource, q.Subresource, q.Name, q.Namespace)
}
