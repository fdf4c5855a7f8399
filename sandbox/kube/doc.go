// Package kube will hold the Kubernetes runner: a sandbox runner that runs
// the agent's commands as Pods of a Kubernetes cluster instead of containers
// of a Docker daemon.
//
// For now it holds only the tests that prove the test cluster works from Go
// with client-go: the cluster scripts/k8s.sh starts (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd and a kubelet, on
// loopback), named by ALFRED_TEST_KUBECONFIG.
package kube
