package kube

import (
	"context"
	"log/slog"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestEnsureSealedRace: a creation that another run won meanwhile is read
// again and accepted; a policy that is missing again after each such race
// is an error after three rounds, not a loop.
func TestEnsureSealedRace(t *testing.T) {
	policies := schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"}
	for _, tc := range []struct {
		name        string
		otherMakes  bool // the other run's policy is there once the create is refused
		wantErr     bool
		wantCreates int
	}{
		{"another run made it", true, false, 1},
		{"made elsewhere, then gone, again and again", false, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			r := &Runner{client: client, namespace: "ns", opts: withDefaults(Options{Instance: "i"}), log: slog.New(slog.DiscardHandler)}
			creates := 0
			client.PrependReactor("create", "networkpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
				creates++
				if tc.otherMakes {
					np := r.sealedPolicy()
					np.Namespace = "ns"
					if err := client.Tracker().Add(np); err != nil {
						t.Fatal(err)
					}
				}
				return true, nil, apierrors.NewAlreadyExists(policies, SealedPolicyName("i"))
			})
			err := r.ensureSealed(context.Background())
			if (err != nil) != tc.wantErr || creates != tc.wantCreates {
				t.Errorf("ensureSealed: %v after %d creates; want error %v after %d", err, creates, tc.wantErr, tc.wantCreates)
			}
		})
	}
}

// TestEnsureSealedPutsBack: a policy whose spec was changed is updated to
// the runner's; one as the runner makes it is left as it is.
func TestEnsureSealedPutsBack(t *testing.T) {
	client := fake.NewClientset()
	r := &Runner{client: client, namespace: "ns", opts: withDefaults(Options{Instance: "i"}), log: slog.New(slog.DiscardHandler)}
	changed := r.sealedPolicy()
	changed.Namespace = "ns"
	changed.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	if err := client.Tracker().Add(changed); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.ensureSealed(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	got, err := client.NetworkingV1().NetworkPolicies("ns").Get(context.Background(), SealedPolicyName("i"), metav1.GetOptions{})
	if err != nil || len(got.Spec.Egress) != 0 || len(got.Spec.PolicyTypes) != 2 {
		t.Fatalf("the policy after ensureSealed: %+v, %v; want it denying all", got, err)
	}
	var updates int
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" {
			updates++
		}
	}
	if updates != 1 {
		t.Errorf("%d updates, want 1: the second call finds it right", updates)
	}
}
