package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A sealed run (network none) is a Pod labelled LabelSealed=true, and one
// standing NetworkPolicy of the instance denies all traffic to and from
// such Pods: Ingress and Egress, no rules. It is made by the first sealed
// run and left in place: a policy per run cost the cluster's enforcer a full
// resync at its creation and another at its deletion (kube-router rewrites
// its iptables chains and ipsets each time), and two API writes per run.
// Before each sealed Pod is created the runner reads the policy back and
// puts it right if it is missing or was changed, so the Pod exists only
// while its policy does.

// LabelSealed is "true" on the Pods of sealed runs, which the instance's
// standing NetworkPolicy selects. A Spec label cannot set or clear it.
const LabelSealed = "alfred.sealed"

// SealedPolicyName is the name of the standing NetworkPolicy of instance's
// sealed runs: "alfred-sealed-" and a hash of the instance (a label value,
// which may hold characters a name may not).
func SealedPolicyName(instance string) string {
	sum := sha256.Sum256([]byte(instance))
	return "alfred-sealed-" + hex.EncodeToString(sum[:6])
}

// sealedPolicy is the runner's standing NetworkPolicy.
func (r *Runner) sealedPolicy() *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:   SealedPolicyName(r.opts.Instance),
			Labels: map[string]string{LabelManaged: "true", LabelInstance: r.opts.Instance},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelInstance: r.opts.Instance, LabelSealed: "true"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// ensureSealed makes sure the standing NetworkPolicy exists as the runner
// makes it: read, then created when missing or updated when its spec was
// changed. A creation that another run won is read again, twice at most.
func (r *Runner) ensureSealed(ctx context.Context) error {
	want := r.sealedPolicy()
	api := r.client.NetworkingV1().NetworkPolicies(r.namespace)
	for range 3 {
		have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, want, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue // another run made it meanwhile
			}
			if err != nil {
				return fmt.Errorf("kube: create the NetworkPolicy %s of the sealed runs: %w", want.Name, err)
			}
			r.log.Info("made the NetworkPolicy of the sealed runs", "name", want.Name)
			return nil
		case err != nil:
			return fmt.Errorf("kube: read the NetworkPolicy %s of the sealed runs: %w", want.Name, err)
		case equality.Semantic.DeepEqual(have.Spec, want.Spec):
			return nil
		}
		r.log.Warn("the NetworkPolicy of the sealed runs was changed; putting it back", "name", want.Name)
		have.Spec = want.Spec
		if _, err := api.Update(ctx, have, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("kube: put back the NetworkPolicy %s of the sealed runs: %w", want.Name, err)
		}
		return nil
	}
	return fmt.Errorf("kube: the NetworkPolicy %s of the sealed runs: created elsewhere, then missing, three times", want.Name)
}
