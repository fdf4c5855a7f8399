#!/bin/sh
# k8s.sh - a real two-node Kubernetes cluster for Alfred's tests, on loopback.
#
# Usage (as root):
#   scripts/k8s.sh start    build the Kubernetes components and kube-router from the Go
#                           module proxy (once: the binaries are cached), install the
#                           Debian packages (etcd-server, containerd, runc,
#                           containernetworking-plugins, openssl, busybox-static,
#                           iptables, ipset, nftables, inotify-tools) when missing,
#                           start etcd, kube-apiserver, kube-controller-manager (its
#                           host-path provisioner: a default StorageClass), kube-scheduler,
#                           a containerd (its CRI plugin) and a kubelet per node,
#                           kube-proxy and kube-router's NetworkPolicy controller, import the test
#                           images into both nodes, run a smoke Pod on each and print
#                           the variables the tests read
#   scripts/k8s.sh env      print those variables again (the cluster must be running)
#   scripts/k8s.sh status   tell which components (both nodes') run and show the two
#                           Nodes (exit 1 when one is missing)
#   scripts/k8s.sh stop     delete the Pods, stop what this script started (each by
#                           its pidfile PID), undo what it changed on the host and
#                           delete the state folder (never the cache)
#   scripts/k8s.sh build    only build (or find cached) the Kubernetes and kube-router binaries
#   scripts/k8s.sh netpol start|stop
#                           start (stop) only the NetworkPolicy enforcer, beside a
#                           cluster of ours started by an older k8s.sh without it
#   scripts/k8s.sh import IMAGE...
#                           copy images of the suite's Docker daemon (ALFRED_TEST_DOCKER_HOST,
#                           scripts/dockerd.sh) into both nodes' containerd:
#                           `docker save`, then `ctr -n k8s.io images import`; Pods use
#                           them by the same name with imagePullPolicy: Never (alfred:abc
#                           is docker.io/library/alfred:abc to both). Timings on stderr.
#
# From a shell (a failed start must stop the chain: `eval "$(...)"` alone would
# hide it, since eval of nothing succeeds):
#   env=$(scripts/k8s.sh start) && eval "$env" && go test ./sandbox/kube/; rc=$?; scripts/k8s.sh stop; exit $rc
# or read the env file it writes: $ALFRED_K8S_STATE/env (KEY=VALUE lines).
#
# Only the printed `export` lines go to stdout; progress and timings go to stderr.
#
# The build: a throwaway module under the cache that requires k8s.io/kubernetes
# v$VERSION and replaces every k8s.io/* staging module it requires at v0.0.0 (it
# replaces them with its own staging/ folders, which a dependency cannot see) by
# its release v0.$MINOR.$PATCH; `go build` (CGO_ENABLED=0, nice -n 15, -p 2: the
# machine is shared) of kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet, kubectl and kube-proxy into $ALFRED_K8S_CACHE/k8s-v$VERSION/bin. The first build takes
# 20-60 minutes on two shared cores (56 min measured under a load of ~10);
# `scripts/k8s.sh build` can run it ahead. A cache that lacks some of them
# (one made before kube-proxy was added) gets only those built: kube-proxy
# alone took 300 s with an empty Go build cache (its modules downloaded,
# two shared cores under a load of ~3) and 11 s with the build cache of
# the others warm. A warm start takes 13-50 s: 13.8 s with kube-proxy, the
# provisioner, the gateway address and the audit log against 14.4 s without
# them (main's script before them, medians of 4 and 3 started in turns on
# two shared cores under a load of 4-12: no cost seen beyond the noise); the
# second node adds about 1.1 s to it (14.2 s against 13.1 s for main's
# one-node script, medians of 4 on two shared cores: its containerd 0.1 s,
# the images imported twice 0.3 s, its kubelet Ready 1.1 s; both smoke Pods
# run at once). A stop takes 9-13 s either way.
# kube-router: `go install $NETPOL_MODULE/cmd/kube-router@v$NETPOL_VERSION` (its own
# go.mod, CGO_ENABLED=0, nice, -p 2) into $ALFRED_K8S_CACHE/netpol-kube-router-v$NETPOL_VERSION/bin:
# 11 min the first time (645 s measured under a load of ~20, its modules
# downloaded too; 6 s again with Go's build cache warm); about 0.6 s added to a
# warm start (its first sync).
#
# What runs, on 127.0.0.1 (ports picked free, never in the NodePort range,
# which is kept to 30000-30009: kube-router lets every Pod reach the node on
# those ports)
# but the API server (on 10.244.0.1, the host's address on the Pod bridge),
# with one CA made by openssl
# for every certificate; the two nodes are two kubelets on this host, each
# with a containerd of its own (two kubelets on one CRI would each
# garbage-collect the other's Pods):
#   etcd                     Debian's etcd-server, TLS with client certificates
#   kube-apiserver           Node,RBAC authorization, NodeRestriction, no privileged Pods,
#                            an audit log of who created and deleted which Pod;
#                            on 10.244.0.1, which it advertises: the Service
#                            default/kubernetes (10.96.0.1:443) leads there, and the
#                            Pods' InClusterConfig with it
#   kube-controller-manager  and kube-scheduler, no leader election; the controller
#                            manager's host-path provisioner (--enable-hostpath-provisioner)
#                            behind the default StorageClass alfred-test-hostpath: each
#                            volume a folder /tmp/hostpath_pv/UUID (a path fixed in its
#                            code; the folder links into the state folder), opened to
#                            every user as it appears (start_volumes says why)
#   kube-proxy               one for both nodes, iptables mode, clusterCIDR the Pod
#                            subnet, NodePorts only on 10.244.0.1, no route_localnet and
#                            the conntrack sysctls left alone
#   containerd               Debian's 1.6 (the kubelet falls back from the RuntimeConfig
#                            call it lacks), our own instances (config, root, state, socket
#                            under the state folder; the second node's under node2/),
#                            CRI plugin, runc; restrict_oom_score_adj, since root may
#                            lack CAP_SYS_RESOURCE
#   kubelet                  node "127.0.0.1" (a kubelet refuses a loopback --node-ip,
#                            but takes a node name that is an IP as its address),
#                            cgroupfs driver, Pods under the cgroup /alfred-test-k8s,
#                            failCgroupV1: false (a cgroup v1 host is refused by default),
#                            podPidsLimit $ALFRED_K8S_POD_PIDS_LIMIT (default 1024)
#   kubelet (2nd node)       node "alfred-test-node2", root folder node2/kubelet, Pods
#                            under the cgroup /alfred-test-k8s-2 (each kubelet cleans
#                            up the Pod cgroups under its own parent), a port of its own,
#                            the same settings otherwise; --cloud-provider=external, and
#                            this script sets its address, 127.0.0.1, as a cloud
#                            controller would (start_kubelet2 says why: the one
#                            NetworkPolicy enforcer guards the Pods whose host IP is its
#                            node's address)
#   CNI                      one bridge alfk8s0 with the host's address 10.244.0.1/23
#                            (the Pods' gateway for one route, the Service range's), the Pod
#                            subnet 10.244.0.0/23 from host-local: node 127.0.0.1 hands
#                            out 10.244.0.2-254, the second node 10.244.1.1-254 (its own
#                            range and IPAM folder). One bridge, not one per node: Pods
#                            of both nodes reach each other as in a real cluster (two
#                            bridges without host addresses or routes would cut the nodes
#                            apart), and the bridge's netfilter and IPv6 rules cover
#                            both. Nothing routes out: no default route in the Pods, and
#                            an nftables table "ip alfred-k8s-fwd" drops what the host
#                            would forward between the bridge and another interface (the
#                            bridge plugin turns IP forwarding on for a gateway).
#   NetworkPolicies          kube-router v2.1.0's network policy controller alone, one
#                            for both nodes (as node 127.0.0.1, whose address is the
#                            host IP of every Pod: two would delete each other's chains)
#                            (--run-router=false --run-service-proxy=false, no health or
#                            metrics port, IPv4): iptables chains and ipsets per Pod and
#                            policy, applied to bridged traffic by br_netfilter
#                            (bridge-nf-call-iptables=1); an nftables table "ip6
#                            alfred-k8s-netpol" drops IPv6 on alfk8s0 (bridged too:
#                            bridge-nf-call-ip6tables=1), since each Pod has a
#                            link-local address that kube-router would not filter.
#                            Chosen over SIG Network's kube-network-policies v0.8.0, which
#                            sends packets to user space with nft's `queue` statement: the
#                            suite's VM kernel (6.18) has NF_TABLES and NFNETLINK_QUEUE but
#                            not NFT_QUEUE (`nft add rule ... queue num 100 bypass` fails:
#                            "No such file or directory"). kube-router v2.1.0, the only
#                            version the module proxy serves, is flagged for security
#                            reports: it runs here only as the test cluster's enforcer,
#                            with no port open and read-only API access.
# No DNS: a Pod names a Service by its ClusterIP (the variables the kubelet
# sets, KUBERNETES_SERVICE_HOST for one).
#
# No registry is reachable: the images are built here (a busybox-static root file
# system, every applet a symlink, a user 1000 "agent"), written as an OCI archive
# and imported with `ctr -n k8s.io images import`:
#   alfred-test/busybox:latest   the test image (as scripts/dockerd.sh makes it);
#                                Pods must use imagePullPolicy: Never
#   alfred-test/pause:1          the Pod sandbox image (a shell waiting for SIGTERM)
#
# On the host, outside the state folder, a start changes (and stop undoes): the
# sysctls the kubelets and the bridge plugin set (net.ipv4.ip_forward=1,
# vm.overcommit_memory=1, kernel.panic=10,
# kernel.panic_on_oops=1, ...: their old values are saved and restored),
# net.bridge.bridge-nf-call-iptables and -ip6tables (set to 1, restored),
# kube-router's KUBE-ROUTER-*, KUBE-POD-FW-* and KUBE-NWPLCY-* chains of the
# filter table and its KUBE-SRC-*/KUBE-DST-* ipsets, kube-proxy's KUBE-*
# chains (removed by kube-proxy --cleanup), the nftables tables ip6
# alfred-k8s-netpol and ip alfred-k8s-fwd, the link /tmp/hostpath_pv, the
# cgroups /alfred-test-k8s and /alfred-test-k8s-2 in each cgroup v1 hierarchy,
# the bridge alfk8s0, the folders /var/lib/cni (CNI result cache),
# /var/lib/kubelet (the device plugin socket: a fixed path, which the second
# kubelet takes over; no device plugin is used) and /var/log/containers (the
# kubelets' log symlinks)
# when they did not exist (else only our files in them), and containerd's shim
# sockets in /run/containerd/s (removed by the shims themselves).
#
# Environment:
#   ALFRED_K8S_VERSION       Kubernetes version (default 1.37.2)
#   ALFRED_K8S_CACHE         cache root; binaries go to $ALFRED_K8S_CACHE/k8s-v$VERSION/bin
#                            (default /var/cache/alfred)
#   ALFRED_K8S_STATE         state folder (default /tmp/alfred-test-k8s; keep it short:
#                            unix socket paths under it must fit 108 bytes)
#   ALFRED_K8S_NETPOL_VERSION kube-router version (default 2.1.0)
#   ALFRED_K8S_BUILD_JOBS    go build -p (default 2)
#   ALFRED_K8S_WAIT          seconds to wait for each component (default 120)
#   ALFRED_K8S_NAMESPACE     namespace made for the tests (default alfred-test; Pod
#                            Security "restricted" is enforced there)
#   ALFRED_K8S_KEEP_FAILED   when set, a failed start leaves everything running (to
#                            debug it; stop cleans up)
set -eu
# shellcheck source-path=SCRIPTDIR source=lib/pidfile.sh
. "$(dirname "$0")/lib/pidfile.sh"
# shellcheck source-path=SCRIPTDIR source=lib/rootfs.sh
. "$(dirname "$0")/lib/rootfs.sh"
PATH=$PATH:/usr/local/go/bin:/usr/sbin:/sbin:/usr/bin:/bin
export PATH

VERSION=${ALFRED_K8S_VERSION:-1.37.2}
VERSION=${VERSION#v}
K8S_MINOR=$(echo "$VERSION" | cut -d. -f2)
K8S_PATCH=$(echo "$VERSION" | cut -d. -f3)
STAGING_VERSION=v0.$K8S_MINOR.$K8S_PATCH
CACHE_ROOT=${ALFRED_K8S_CACHE:-/var/cache/alfred}
CACHE=$CACHE_ROOT/k8s-v$VERSION
BIN=$CACHE/bin
BUILD_LOG=$CACHE_ROOT/build-k8s-v$VERSION.log
BUILD_JOBS=${ALFRED_K8S_BUILD_JOBS:-2}
COMPONENTS="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy"
STATE=${ALFRED_K8S_STATE:-/tmp/alfred-test-k8s}
WAIT=${ALFRED_K8S_WAIT:-120}
NAMESPACE=${ALFRED_K8S_NAMESPACE:-alfred-test}
ENVFILE=$STATE/env
MARKER=$STATE/.alfred-k8s
PKI=$STATE/pki
LOGS=$STATE/logs
CTRD_SOCK=$STATE/containerd.sock
NODE=127.0.0.1
# The second node, on the same host (the *_node2 functions): a kubelet and a
# containerd of its own under $NODE2_DIR, its own cgroup parent and its own
# half of the Pod network. Its address is 127.0.0.1 too (see start_kubelet2).
NODE2=alfred-test-node2
NODE2_DIR=$STATE/node2
CTRD2_SOCK=$NODE2_DIR/containerd.sock
BRIDGE=alfk8s0
# One Pod network on one bridge; each node's host-local hands out its own range.
POD_SUBNET=10.244.0.0/23
# The host's address on the Pod bridge: the Pods' gateway, where the API
# server listens (the Service default/kubernetes sends the Pods there).
NODE_IP=10.244.0.1
POD_RANGE="10.244.0.2 10.244.0.254"
POD_RANGE2="10.244.1.1 10.244.1.254"
SERVICE_RANGE=10.96.0.0/24
# The NodePorts: kube-router lets every Pod, a sealed one too, reach the
# node's own addresses on these ports, so the range is kept to ten (the
# suite uses none) and no port of ours is picked in it.
NODE_PORTS=30000-30009
CGROUP_ROOT=alfred-test-k8s
CGROUP_ROOT2=alfred-test-k8s-2
# Processes (threads) a Pod may have at once, all its containers together:
# the kubelet's podPidsLimit, the only per-Pod PIDs limit Kubernetes has.
POD_PIDS_LIMIT=${ALFRED_K8S_POD_PIDS_LIMIT:-1024}
IMAGE=alfred-test/busybox:latest
PAUSE_IMAGE=alfred-test/pause:1
HOST_DIRS="/var/lib/cni /var/lib/kubelet /var/log/containers"
# The folder the controller manager's host-path provisioner makes volumes in
# (fixed in its code); a link into the state folder while the cluster runs.
HOSTPATH_PV=/tmp/hostpath_pv
STORAGE_CLASS=alfred-test-hostpath
SYSCTLS="net/ipv4/ip_forward vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes"
# Started in this order, stopped in the reverse one.
SERVICES="volumes etcd kube-apiserver containerd containerd2 kube-proxy kube-controller-manager kube-scheduler kubelet kubelet2 kube-router"
# The NetworkPolicy enforcer (see start_netpol).
NETPOL_VERSION=${ALFRED_K8S_NETPOL_VERSION:-2.1.0}
NETPOL_VERSION=${NETPOL_VERSION#v}
NETPOL_MODULE=github.com/cloudnativelabs/kube-router/v2
NETPOL_CACHE=$CACHE_ROOT/netpol-kube-router-v$NETPOL_VERSION
NETPOL_BIN=$NETPOL_CACHE/bin/kube-router
NETPOL_BUILD_LOG=$CACHE_ROOT/build-netpol-kube-router-v$NETPOL_VERSION.log
BRIDGE_NF="net/bridge/bridge-nf-call-iptables net/bridge/bridge-nf-call-ip6tables"
NFT_TABLE=alfred-k8s-netpol
# Pods reach each other and the host, never beyond: no forwarding between
# the Pod bridge and another interface (an nftables table of ours).
NFT_FWD_TABLE=alfred-k8s-fwd

log() { printf 'k8s.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

now_ms() { date +%s%3N; }

# ---------------------------------------------------------------- packages

# install_packages installs the Debian packages named when their file is
# missing: "file:package ..." pairs. A policy-rc.d that exits 101 is put in
# place first, when there is none, so that etcd-server and containerd do not
# start their default services; only a policy-rc.d made here is removed.
install_packages() {
	need=""
	for pair in "$@"; do
		[ -e "${pair%%:*}" ] || need="$need ${pair#*:}"
	done
	[ -z "$need" ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages:$need; run as root to install them"
	created_policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 0755 /usr/sbin/policy-rc.d
		created_policy=1
	fi
	log "installing$need"
	rc=0
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2 ||
		{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2; } || rc=$?
	if [ -n "$created_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
	[ $rc = 0 ] || die "installation of$need failed"
}

# ---------------------------------------------------------------- build

k8s_cached() { [ -z "$(k8s_missing)" ]; }

# k8s_missing lists the components the cache lacks.
k8s_missing() {
	for c in $COMPONENTS; do [ -x "$BIN/$c" ] || printf '%s ' "$c"; done
}

# build_k8s builds the components the cache lacks (all of them the first
# time; one added to COMPONENTS later alone) into a temporary folder next to
# the cache and moves them into place, a whole folder the first time, one
# binary at a time (each a rename) after: a killed build never leaves a half
# cache or a half binary.
build_k8s() {
	missing=$(k8s_missing)
	command -v go >/dev/null 2>&1 || die "build of Kubernetes failed: the go command is missing"
	mkdir -p "$CACHE_ROOT" || die "cannot create the cache folder $CACHE_ROOT"
	tmp=$(mktemp -d "$CACHE_ROOT/.build-k8s-v$VERSION.XXXXXX") || die "cannot create a build folder in $CACHE_ROOT"
	# The temporary folder goes whatever happens; a signal ends the script too.
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 1' INT TERM HUP
	t0=$(date +%s)
	log "building Kubernetes v$VERSION (${missing% }) from the Go module proxy (20-60 min the first time, all of them; log: $BUILD_LOG)"
	: >"$BUILD_LOG"
	go mod download -json "k8s.io/kubernetes@v$VERSION" >"$tmp/module.json" 2>>"$BUILD_LOG" ||
		{ cat "$tmp/module.json" >>"$BUILD_LOG"; die "build failed: download of k8s.io/kubernetes@v$VERSION; see $BUILD_LOG"; }
	gomod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' "$tmp/module.json")
	commit=$(sed -n 's/^[[:space:]]*"Hash": "\(.*\)",*$/\1/p' "$tmp/module.json" | head -n 1)
	[ -f "$gomod" ] || die "build failed: no go.mod in the answer of go mod download: $(cat "$tmp/module.json")"
	staging=$(awk '$1 == "require" && $2 == "(" { r = 1; next } r && $1 == ")" { r = 0 } r && $1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }' "$gomod")
	[ -n "$staging" ] || die "build failed: no staging module found in $gomod"
	mkdir "$tmp/mod" "$tmp/bin"
	{
		echo "// Generated by scripts/k8s.sh to build Kubernetes v$VERSION; thrown away after the build."
		echo "module alfred.invalid/k8s-build"
		echo
		echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")"
		echo
		echo "require k8s.io/kubernetes v$VERSION"
		echo
		echo "replace ("
		for m in $staging; do printf '\t%s => %s %s\n' "$m" "$m" "$STAGING_VERSION"; done
		echo ")"
	} >"$tmp/mod/go.mod"
	cat "$tmp/mod/go.mod" >>"$BUILD_LOG"
	date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	ldflags="-s -w"
	for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
		ldflags="$ldflags -X $p.gitVersion=v$VERSION -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR"
		ldflags="$ldflags -X $p.gitTreeState=clean -X $p.buildDate=$date${commit:+ -X $p.gitCommit=$commit}"
	done
	pkgs=""
	for c in $missing; do pkgs="$pkgs k8s.io/kubernetes/cmd/$c"; done
	# nice and few parallel jobs: the machine is shared with other test runs.
	# The tags are those of Kubernetes' own release builds (hack/lib/golang.sh).
	# shellcheck disable=SC2086
	(cd "$tmp/mod" && GOFLAGS="-mod=mod -buildvcs=false -p=$BUILD_JOBS" CGO_ENABLED=0 nice -n 15 \
		go build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$tmp/bin/" $pkgs) \
		>>"$BUILD_LOG" 2>&1 || die "build of Kubernetes v$VERSION failed: see $BUILD_LOG"
	# The module files say what was built from what.
	cp "$tmp/mod/go.mod" "$tmp/mod/go.sum" "$tmp/bin/" 2>/dev/null || true
	chmod -R a+rX "$tmp/bin"
	mkdir -p "$CACHE"
	# mv -T refuses to move into an existing folder: another start may have
	# finished the same build first, and its cache is as good as ours.
	if [ -d "$BIN" ]; then
		for c in $missing; do
			[ -x "$BIN/$c" ] || mv -f "$tmp/bin/$c" "$BIN/$c" || die "cannot move $c into $BIN"
		done
	elif ! mv -T "$tmp/bin" "$BIN" 2>/dev/null; then
		k8s_cached || die "cannot rename the build into $BIN"
		log "another start cached Kubernetes v$VERSION meanwhile; using it"
	fi
	rm -rf "$tmp"
	trap - EXIT INT TERM HUP
	log "built Kubernetes v$VERSION (${missing% }) in $(($(date +%s) - t0)) s into $BIN"
}

# ---------------------------------------------------------------- ports

# listening prints the TCP ports something listens on, in hex as the kernel
# lists them in /proc/net/tcp and tcp6.
listening() {
	awk 'FNR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u
}

# pick_port VAR sets VAR to a TCP port that nothing listens on and that this
# start has not handed out yet (it runs in this shell, not in a $(...)
# subshell, so that it remembers what it handed out).
PORTS_TAKEN=""
pick_port() {
	i=0
	while [ $i -lt 100 ]; do
		i=$((i + 1))
		port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 30000))
		case " $PORTS_TAKEN " in *" $port "*) continue ;; esac
		# Not in the NodePort range (see NODE_PORTS).
		[ "$port" -ge "${NODE_PORTS%-*}" ] && [ "$port" -le "${NODE_PORTS#*-}" ] && continue
		listening | grep -qx "$(printf '%04X' "$port")" && continue
		PORTS_TAKEN="$PORTS_TAKEN $port"
		eval "$1=$port"
		return 0
	done
	fail_start "no free TCP port found for $1"
}

# ---------------------------------------------------------------- certificates

# cert NAME CN [O] [SAN]: a key and a certificate signed by our CA.
cert() {
	name=$1 cn=$2 org=${3:-} san=${4:-}
	subj="/CN=$cn"
	[ -n "$org" ] && subj="/O=$org$subj"
	openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key" 2>/dev/null
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=${san:+serverAuth,}clientAuth"
		[ -n "$san" ] && echo "subjectAltName=$san"
	} >"$PKI/$name.ext"
	openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
		-days 30 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null ||
		die "openssl could not sign the certificate $name"
	rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

make_pki() {
	mkdir -p "$PKI"
	chmod 0700 "$PKI"
	openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/ca.key" 2>/dev/null
	openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=alfred-test-k8s-ca" -days 30 -sha256 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
		-out "$PKI/ca.crt" 2>/dev/null || die "openssl could not make the CA"
	loop="IP:127.0.0.1,DNS:localhost"
	cert etcd-server etcd "" "$loop"
	cert apiserver-etcd-client kube-apiserver-etcd-client
	cert apiserver kube-apiserver "" \
		"$loop,IP:$NODE_IP,IP:${SERVICE_RANGE%.0/*}.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
	cert admin alfred-test-admin system:masters
	cert controller-manager system:kube-controller-manager
	cert scheduler system:kube-scheduler
	cert kubelet "system:node:$NODE" system:nodes
	cert kubelet-server "$NODE" "" "$loop"
	cert kubelet2 "system:node:$NODE2" system:nodes
	cert kubelet2-server "$NODE2" "" "$loop"
	cert kube-proxy system:kube-proxy
	# The service account token signing key (ES256).
	openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/sa.key" 2>/dev/null
	openssl ec -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
	rm -f "$PKI/ca.srl"
}

# kubeconfig NAME USER: a kubeconfig with the certificates embedded.
kubeconfig() {
	b64() { base64 -w0 <"$1"; }
	cat >"$STATE/$1.kubeconfig" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: alfred-test
		  cluster:
		    server: https://$NODE_IP:$APISERVER_PORT
		    certificate-authority-data: $(b64 "$PKI/ca.crt")
		users:
		- name: $1
		  user:
		    client-certificate-data: $(b64 "$PKI/$2.crt")
		    client-key-data: $(b64 "$PKI/$2.key")
		contexts:
		- name: alfred-test
		  context:
		    cluster: alfred-test
		    user: $1
		    namespace: $NAMESPACE
		current-context: alfred-test
	EOF
	chmod 0600 "$STATE/$1.kubeconfig"
}

# ---------------------------------------------------------------- images

# make_images writes an OCI image archive of two images sharing one layer, a
# busybox-static root file system: the test image and the sandbox image.
make_images() {
	dir=$STATE/images
	rootfs=$dir/rootfs
	layout=$dir/oci
	rm -rf "$dir"
	mkdir -p "$rootfs/etc" "$rootfs/tmp" "$rootfs/home/agent" "$rootfs/workspace" \
		"$rootfs/proc" "$rootfs/sys" "$rootfs/dev" "$layout/blobs/sha256"
	chmod 1777 "$rootfs/tmp"
	# Every applet a symlink, made by busybox itself in one process (a loop of
	# ln takes seconds on a busy machine); its links point at the real path of
	# the running binary (/usr/bin/busybox on a merged /usr), so the binary
	# goes there and /bin points at its folder when that is not /bin.
	bb=$(readlink -f /bin/busybox)
	bbdir=${bb%/*}
	mkdir -p "$rootfs$bbdir"
	cp /bin/busybox "$rootfs$bb"
	/bin/busybox --install -s "$rootfs$bbdir"
	if [ ! -e "$rootfs/bin" ]; then ln -s "${bbdir#/}" "$rootfs/bin"; fi
	if [ ! -L "$rootfs$bbdir/sh" ] || [ ! -L "$rootfs$bbdir/echo" ]; then
		fail_start "busybox --install made no sh or echo in the image's $bbdir"
	fi
	write_users "$rootfs"
	# The sandbox process: it waits, and exits on SIGTERM (a pause container).
	cat >"$rootfs/pause" <<-'EOF'
		#!/bin/sh
		trap 'exit 0' TERM INT
		while :; do sleep 2147483647 & wait $!; done
	EOF
	chmod 0755 "$rootfs/pause"
	chown -R 1000:1000 "$rootfs/home/agent" "$rootfs/workspace"
	tar -C "$rootfs" --numeric-owner --sort=name --mtime=@0 -cf "$dir/layer.tar" .
	layer=$(blob "$dir/layer.tar")
	layer_size=$(stat -c %s "$dir/layer.tar")
	manifests=""
	for spec in "$IMAGE|\"Env\":[\"PATH=/bin\"],\"WorkingDir\":\"/workspace\",\"Labels\":{\"alfred.test-image\":\"busybox-static\"}" \
		"$PAUSE_IMAGE|\"Env\":[\"PATH=/bin\"],\"Entrypoint\":[\"/pause\"],\"Labels\":{\"alfred.test-image\":\"pause\"}"; do
		name=docker.io/${spec%%|*}
		printf '{"architecture":"amd64","os":"linux","config":{%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
			"${spec#*|}" "$layer" >"$dir/config.json"
		config=$(blob "$dir/config.json")
		printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
			"$config" "$(stat -c %s "$dir/config.json")" "$layer" "$layer_size" >"$dir/manifest.json"
		manifest=$(blob "$dir/manifest.json")
		manifests="$manifests${manifests:+,}$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}' \
			"$manifest" "$(stat -c %s "$dir/manifest.json")" "$name" "${name##*:}")"
	done
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' "$manifests" >"$layout/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
	tar -C "$layout" -cf "$dir/images.tar" .
	rm -rf "$rootfs" "$layout" "$dir/layer.tar" "$dir/config.json" "$dir/manifest.json"
}

# blob FILE moves FILE into the OCI layout as a blob (a copy) and prints its digest.
blob() {
	sum=$(sha256sum "$1" | cut -d' ' -f1)
	cp "$1" "$layout/blobs/sha256/$sum"
	echo "$sum"
}

ctr_k8s() { ctr --address "$CTRD_SOCK" --namespace k8s.io "$@"; }
ctr_node2() { ctr --address "$CTRD2_SOCK" --namespace k8s.io "$@"; }

# ---------------------------------------------------------------- processes

# Each service runs under setsid (it outlives this script and a Ctrl-C of the
# caller) with its PID in $STATE/NAME.pid; its command line holds the mark
# below, a path inside our state folder, so that a recycled PID or a process
# of someone else is never touched.
mark() {
	case $1 in
	etcd) echo "--data-dir=$STATE/etcd" ;;
	kube-apiserver) echo "--etcd-keyfile=$PKI/apiserver-etcd-client.key" ;;
	containerd) echo "--config=$STATE/containerd.toml" ;;
	containerd2) echo "--config=$NODE2_DIR/containerd.toml" ;;
	kube-controller-manager) echo "--kubeconfig=$STATE/controller-manager.kubeconfig" ;;
	kube-scheduler) echo "--kubeconfig=$STATE/scheduler.kubeconfig" ;;
	kubelet) echo "--root-dir=$STATE/kubelet" ;;
	kubelet2) echo "--root-dir=$NODE2_DIR/kubelet" ;;
	kube-router) echo "--kubeconfig=$STATE/netpol.kubeconfig" ;;
	kube-proxy) echo "--config=$STATE/kube-proxy.yaml" ;;
	volumes) echo "$STATE/volumes" ;;
	esac
}

ours() { pid_of "$STATE/$1.pid" "$(mark "$1")"; }

# launched_alive NAME tells whether the process launch started for NAME
# still runs (not a zombie). Not ours: right after launch its command line
# may still be the forking shell's, before the exec, and lack the mark.
launched_alive() {
	pid=$(cat "$STATE/$1.pid" 2>/dev/null) || return 1
	[ -r "/proc/$pid/stat" ] || return 1
	state=$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f1)
	[ "$state" != Z ]
}

# launch NAME COMMAND...: start a service in the background, log to $LOGS/NAME.log.
launch() {
	name=$1
	shift
	setsid "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
	echo $! >"$STATE/$name.pid"
}

# stop_services NAME...: SIGTERM to the services of our pidfiles, all at once,
# then SIGKILL to those still there after 30 s.
stop_services() {
	pids=""
	for name in "$@"; do
		pid=$(ours "$name") || continue
		log "stopping $name (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
		pids="$pids $pid"
	done
	i=0
	for pid in $pids; do
		while [ -d "/proc/$pid" ] && [ $i -lt 150 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		if [ -d "/proc/$pid" ]; then
			log "pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-60)) ignored SIGTERM for 15s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	for name in "$@"; do rm -f "$STATE/$name.pid"; done
}

# fail_start reports a failed start step with the tail of a log, stops what was
# started and exits.
fail_start() {
	log "start failed: $1"
	if [ -n "${2:-}" ] && [ -f "$LOGS/$2.log" ]; then
		log "last lines of $LOGS/$2.log:"
		tail -n 25 "$LOGS/$2.log" >&2
	fi
	if [ -n "${ALFRED_K8S_KEEP_FAILED:-}" ]; then
		die "start failed: $1 (ALFRED_K8S_KEEP_FAILED: everything left running, state in $STATE)"
	fi
	teardown
	die "start failed: $1 (everything stopped; logs kept in $LOGS until the next start or stop)"
}

# wait_for NAME WHAT COMMAND...: run COMMAND until it succeeds, the service
# NAME exits, or WAIT seconds pass.
wait_for() {
	name=$1 what=$2
	shift 2
	deadline=$(($(date +%s) + WAIT))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		launched_alive "$name" || fail_start "$name exited while waiting for $what" "$name"
		[ "$(date +%s)" -lt "$deadline" ] || fail_start "$name: no $what within ${WAIT}s" "$name"
		sleep 0.3
	done
}

kubectl() { "$BIN/kubectl" --kubeconfig "$STATE/admin.kubeconfig" "$@"; }

# ---------------------------------------------------------------- components

start_etcd() {
	mkdir -p "$STATE/etcd"
	chmod 0700 "$STATE/etcd"
	launch etcd etcd --name=alfred-test "$(mark etcd)" \
		--listen-client-urls="https://127.0.0.1:$ETCD_PORT" --advertise-client-urls="https://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster="alfred-test=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new \
		--cert-file="$PKI/etcd-server.crt" --key-file="$PKI/etcd-server.key" \
		--client-cert-auth --trusted-ca-file="$PKI/ca.crt" \
		--logger=zap --log-level=warn
	wait_for etcd "health answer" curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/apiserver-etcd-client.crt" \
		--key "$PKI/apiserver-etcd-client.key" "https://127.0.0.1:$ETCD_PORT/health"
}

# audit_policy writes the API server's audit policy: who created and deleted
# which Pod, from which address (Metadata: no object, no secret), nothing
# else. The tests read the log ($LOGS/audit.log, ALFRED_TEST_K8S_AUDIT_LOG)
# to see who made a run's Pod.
audit_policy() {
	cat >"$STATE/audit-policy.yaml" <<-EOF
		# Written by scripts/k8s.sh; deleted by its stop.
		apiVersion: audit.k8s.io/v1
		kind: Policy
		omitStages: [RequestReceived]
		rules:
		- level: Metadata
		  verbs: [create, delete]
		  resources:
		  - group: ""
		    resources: [pods]
		- level: None
	EOF
}

start_apiserver() {
	audit_policy
	launch kube-apiserver "$BIN/kube-apiserver" \
		--etcd-servers="https://127.0.0.1:$ETCD_PORT" --etcd-cafile="$PKI/ca.crt" \
		--etcd-certfile="$PKI/apiserver-etcd-client.crt" "$(mark kube-apiserver)" \
		--bind-address="$NODE_IP" --advertise-address="$NODE_IP" --secure-port="$APISERVER_PORT" \
		--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
		--client-ca-file="$PKI/ca.crt" \
		--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$PKI/ca.crt" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
		--service-cluster-ip-range="$SERVICE_RANGE" --service-node-port-range="$NODE_PORTS" \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--allow-privileged=false --anonymous-auth=false --profiling=false \
		--audit-policy-file="$STATE/audit-policy.yaml" --audit-log-path="$LOGS/audit.log" \
		--audit-log-maxsize=50 --audit-log-maxbackup=1
}

wait_apiserver() {
	wait_for kube-apiserver "readyz answer" curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" \
		--key "$PKI/admin.key" "https://$NODE_IP:$APISERVER_PORT/readyz"
}

# containerd_files DIR SOCKET NETWORK "FIRST LAST" writes a containerd
# configuration (DIR/containerd.toml: root, state, runc and CNI folders under
# DIR) and its CNI network NETWORK on the Pod bridge, whose host-local hands
# out the addresses FIRST to LAST of the Pod subnet.
containerd_files() {
	dir=$1 sock=$2 net=$3
	first=${4% *} last=${4#* }
	mkdir -p "$dir/containerd/root" "$dir/containerd/state" "$dir/cni/net.d" "$dir/cni/ipam" "$dir/runc"
	cat >"$dir/containerd.toml" <<-EOF
		# Written by scripts/k8s.sh; deleted by its stop.
		version = 2
		root = "$dir/containerd/root"
		state = "$dir/containerd/state"
		disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
		[grpc]
		  address = "$sock"
		[ttrpc]
		  address = "$dir/containerd-ttrpc.sock"
		[debug]
		  level = "warn"
		[plugins."io.containerd.internal.v1.opt"]
		  path = "$dir/containerd/opt"
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "docker.io/$PAUSE_IMAGE"
		  disable_tcp_service = true
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "0"
		  enable_selinux = false
		  netns_mounts_under_state_dir = true
		  # The kubelet asks for a negative OOM score for the sandboxes (-998)
		  # and Guaranteed Pods; lowering a score needs CAP_SYS_RESOURCE, which
		  # root may lack (in a VM sandbox, a container): keep the scores at or
		  # above containerd's own.
		  restrict_oom_score_adj = true
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    snapshotter = "overlayfs"
		    default_runtime_name = "runc"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		        BinaryName = "$(command -v runc)"
		        Root = "$dir/runc"
		        SystemdCgroup = false
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "$dir/cni/net.d"
		    max_conf_num = 1
	EOF
	# The bridge with the host's address as the Pods' gateway (start_bridge
	# made it) for one route, the Service range's (no default route): they
	# reach each other (on both nodes), the host's address on the bridge (the
	# API server) and the Services (kube-proxy's DNAT on the host) and
	# nothing beyond (no route; the table $NFT_FWD_TABLE); no masquerading.
	cat >"$dir/cni/net.d/10-$net.conflist" <<-EOF
		{
		  "cniVersion": "1.0.0",
		  "name": "$net",
		  "plugins": [
		    {
		      "type": "bridge",
		      "bridge": "$BRIDGE",
		      "isGateway": true,
		      "ipMasq": false,
		      "hairpinMode": false,
		      "ipam": {
		        "type": "host-local",
		        "dataDir": "$dir/cni/ipam",
		        "ranges": [[{"subnet": "$POD_SUBNET", "rangeStart": "$first", "rangeEnd": "$last"}]],
		        "routes": [{"dst": "$SERVICE_RANGE"}]
		      }
		    },
		    {"type": "loopback"}
		  ]
		}
	EOF
}

start_containerd() {
	containerd_files "$STATE" "$CTRD_SOCK" alfred-test "$POD_RANGE"
	# Folders containerd's CNI library and the kubelet make outside the state
	# folder whatever their configuration says (the CNI result cache, the
	# device plugin socket, the legacy log symlinks): stop deletes those that
	# did not exist before.
	for d in $HOST_DIRS; do [ -e "$d" ] || echo "$d"; done >"$STATE/host-dirs"
	launch containerd containerd "$(mark containerd)"
	wait_for containerd "answer on $CTRD_SOCK" ctr --address "$CTRD_SOCK" version
}

# start_containerd2 starts the second node's containerd: its own
# configuration, root, state, sockets and runc root under $NODE2_DIR (two
# kubelets on one CRI would each garbage-collect the other's Pods), and its
# own half of the Pod network on the same bridge.
start_containerd2() {
	containerd_files "$NODE2_DIR" "$CTRD2_SOCK" alfred-test-2 "$POD_RANGE2"
	launch containerd2 containerd "$(mark containerd2)"
	wait_for containerd2 "answer on $CTRD2_SOCK" ctr --address "$CTRD2_SOCK" version
}

# import_images imports the cluster's own images into each node's containerd.
import_images() {
	make_images
	for c in ctr_k8s ctr_node2; do
		$c images import "$STATE/images/images.tar" >"$LOGS/import.log" 2>&1 ||
			{ cat "$LOGS/import.log" >&2; fail_start "$c images import of $STATE/images/images.tar"; }
		for i in "$IMAGE" "$PAUSE_IMAGE"; do
			$c images check "name==docker.io/$i" | grep -q complete ||
				fail_start "image docker.io/$i missing after the import ($c): $(cat "$LOGS/import.log")"
		done
	done
	rm -rf "$STATE/images"
}

start_controllers() {
	launch kube-controller-manager "$BIN/kube-controller-manager" "$(mark kube-controller-manager)" \
		--authentication-kubeconfig="$STATE/controller-manager.kubeconfig" \
		--authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
		--bind-address=127.0.0.1 --secure-port="$KCM_PORT" --leader-elect=false \
		--use-service-account-credentials --service-account-private-key-file="$PKI/sa.key" \
		--root-ca-file="$PKI/ca.crt" --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
		--service-cluster-ip-range="$SERVICE_RANGE" --profiling=false \
		--enable-hostpath-provisioner
	launch kube-scheduler "$BIN/kube-scheduler" "$(mark kube-scheduler)" \
		--authentication-kubeconfig="$STATE/scheduler.kubeconfig" \
		--authorization-kubeconfig="$STATE/scheduler.kubeconfig" \
		--bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false --profiling=false
	wait_for kube-controller-manager "healthz answer" curl -fsSk "https://127.0.0.1:$KCM_PORT/healthz"
	wait_for kube-scheduler "healthz answer" curl -fsSk "https://127.0.0.1:$SCHED_PORT/healthz"
}

# cgroup_dirs prints the cgroup v1 hierarchies (the folders of /sys/fs/cgroup
# that hold a cgroup.procs), or /sys/fs/cgroup itself on a pure cgroup v2 host.
cgroup_dirs() {
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo /sys/fs/cgroup
		return
	fi
	for d in /sys/fs/cgroup/*/; do
		d=${d%/}
		[ "$d" = /sys/fs/cgroup/unified ] && continue
		[ -f "$d/cgroup.procs" ] && echo "$d"
	done
}

# make_cgroups ROOT creates the cgroup a kubelet puts its Pods under (it
# requires it to exist in every hierarchy).
make_cgroups() {
	for d in $(cgroup_dirs); do
		mkdir -p "$d/$1"
		if [ -f "$d/cpuset.cpus" ]; then
			[ -n "$(cat "$d/$1/cpuset.cpus")" ] || cat "$d/cpuset.cpus" >"$d/$1/cpuset.cpus"
			[ -n "$(cat "$d/$1/cpuset.mems")" ] || cat "$d/cpuset.mems" >"$d/$1/cpuset.mems"
		fi
	done
}

# remove_cgroups removes our cgroup trees (both nodes'), deepest first (after the kubelet and
# the Pods are gone; a cgroup that still holds a process stays, and is named).
remove_cgroups() {
	# runc also mirrors the containers into the cgroup v2 hierarchy of a
	# hybrid host (/sys/fs/cgroup/unified).
	for d in $(cgroup_dirs) /sys/fs/cgroup/unified; do
		for r in $CGROUP_ROOT $CGROUP_ROOT2; do
			[ -d "$d/$r" ] || continue
			find "$d/$r" -depth -type d -exec rmdir {} \; 2>/dev/null ||
				log "could not remove all of the cgroup $d/$r (processes left in it?)"
		done
	done
}

save_sysctls() {
	[ -f "$STATE/sysctls" ] && return 0
	for s in $SYSCTLS; do echo "$s $(cat "/proc/sys/$s")"; done >"$STATE/sysctls"
}

restore_sysctls() {
	[ -f "$STATE/sysctls" ] || return 0
	while read -r s v; do
		[ "$(cat "/proc/sys/$s")" = "$v" ] || echo "$v" >"/proc/sys/$s" || log "could not restore $s=$v"
	done <"$STATE/sysctls"
	rm -f "$STATE/sysctls"
}

# kubelet_config DIR PORT CERT SOCKET CGROUP writes DIR/kubelet.yaml: a
# kubelet serving on 127.0.0.1:PORT with the certificate CERT, its Pods on
# the containerd at SOCKET, under the cgroup /CGROUP, their logs in
# DIR/pod-logs.
kubelet_config() {
	mkdir -p "$1/kubelet" "$1/pod-logs"
	cat >"$1/kubelet.yaml" <<-EOF
		# Written by scripts/k8s.sh; deleted by its stop.
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		address: 127.0.0.1
		port: $2
		readOnlyPort: 0
		healthzPort: 0
		tlsCertFile: $PKI/$3.crt
		tlsPrivateKeyFile: $PKI/$3.key
		rotateCertificates: false
		serverTLSBootstrap: false
		authentication:
		  anonymous:
		    enabled: false
		  webhook:
		    enabled: true
		  x509:
		    clientCAFile: $PKI/ca.crt
		authorization:
		  mode: Webhook
		containerRuntimeEndpoint: unix://$4
		cgroupDriver: cgroupfs
		cgroupRoot: /$5
		failCgroupV1: false
		failSwapOn: false
		podLogsDir: $1/pod-logs
		resolvConf: /etc/resolv.conf
		maxPods: 50
		podPidsLimit: $POD_PIDS_LIMIT
		registerNode: true
		imageGCHighThresholdPercent: 100
		imageGCLowThresholdPercent: 99
		evictionHard:
		  memory.available: 50Mi
		  nodefs.available: 1%
		  nodefs.inodesFree: 1%
		  imagefs.available: 1%
		  imagefs.inodesFree: 1%
		shutdownGracePeriod: 0s
		enableProfilingHandler: false
		enableDebuggingHandlers: true
		logging:
		  verbosity: 1
	EOF
}

start_kubelet() {
	kubelet_config "$STATE" "$KUBELET_PORT" kubelet-server "$CTRD_SOCK" "$CGROUP_ROOT"
	make_cgroups "$CGROUP_ROOT"
	save_sysctls
	launch kubelet "$BIN/kubelet" "$(mark kubelet)" --config="$STATE/kubelet.yaml" \
		--kubeconfig="$STATE/kubelet.kubeconfig" --hostname-override="$NODE"
	wait_for kubelet "Ready node $NODE" node_ready "$NODE"
}

# start_kubelet2 starts the second node's kubelet, "$NODE2". A kubelet refuses
# a loopback --node-ip and takes its address from a node name that is an IP:
# a name of 127.0.0.2 would give the node that address, and the Pods on it
# that host IP. kube-router's NetworkPolicy controller guards the Pods whose
# host IP is its node's address, and two of them on one host would each
# delete the other's iptables chains. So this kubelet runs with
# --cloud-provider=external, which makes it register with no address and
# the taint node.cloudprovider.kubernetes.io/uninitialized and then keep the
# addresses set on its Node: this script sets the InternalIP 127.0.0.1
# (where the kubelet listens, on a port of its own; no Hostname address,
# which the API server would prefer and fail to resolve) and removes the
# taint, as a cloud controller would. Both nodes' Pods then have the host IP 127.0.0.1 and the
# one kube-router guards them all.
start_kubelet2() {
	kubelet_config "$NODE2_DIR" "$KUBELET2_PORT" kubelet2-server "$CTRD2_SOCK" "$CGROUP_ROOT2"
	make_cgroups "$CGROUP_ROOT2"
	launch kubelet2 "$BIN/kubelet" "$(mark kubelet2)" --config="$NODE2_DIR/kubelet.yaml" \
		--kubeconfig="$STATE/kubelet2.kubeconfig" --hostname-override="$NODE2" --cloud-provider=external
	wait_for kubelet2 "Node $NODE2" kubectl get node "$NODE2"
	kubectl patch node "$NODE2" --subresource=status --type=merge \
		-p '{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}]}}' >/dev/null ||
		fail_start "setting the addresses of the node $NODE2" kubelet2
	kubectl taint node "$NODE2" node.cloudprovider.kubernetes.io/uninitialized- >/dev/null ||
		fail_start "removing the taint node.cloudprovider.kubernetes.io/uninitialized of $NODE2" kubelet2
	wait_for kubelet2 "Ready node $NODE2" node_ready "$NODE2"
}

node_ready() {
	[ "$(kubectl get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# ---------------------------------------------------------------- NetworkPolicy enforcement
#
# kube-router's network policy controller, alone (no routing, no service proxy,
# no CNI file of its own), runs on the host as the node's enforcer: iptables
# chains (Debian's iptables, nf_tables backend) and ipsets per Pod and policy,
# which see the bridged Pod traffic through br_netfilter. It handles IPv4 only;
# the Pods' IPv6 link-local addresses would pass around it, so an nftables table
# of ours (ip6 family) drops every IPv6 packet on the Pod bridge.

netpol_cached() { [ -x "$NETPOL_BIN" ]; }

# build_netpol builds kube-router from the Go module proxy with its own go.mod
# (go install MODULE@VERSION: no replace directive to carry), into a temporary
# folder renamed into place as build_k8s does.
build_netpol() {
	command -v go >/dev/null 2>&1 || die "build of kube-router failed: the go command is missing"
	mkdir -p "$CACHE_ROOT" || die "cannot create the cache folder $CACHE_ROOT"
	tmp=$(mktemp -d "$CACHE_ROOT/.build-netpol-v$NETPOL_VERSION.XXXXXX") || die "cannot create a build folder in $CACHE_ROOT"
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 1' INT TERM HUP
	t0=$(date +%s)
	log "building kube-router v$NETPOL_VERSION from the Go module proxy (5-15 min the first time; log: $NETPOL_BUILD_LOG)"
	(cd "$tmp" && GOBIN="$tmp/bin" GOFLAGS="-buildvcs=false -p=$BUILD_JOBS" CGO_ENABLED=0 nice -n 15 \
		go install -trimpath -ldflags "-s -w -X $NETPOL_MODULE/pkg/version.Version=v$NETPOL_VERSION" \
		"$NETPOL_MODULE/cmd/kube-router@v$NETPOL_VERSION") >"$NETPOL_BUILD_LOG" 2>&1 ||
		die "build of kube-router v$NETPOL_VERSION failed: see $NETPOL_BUILD_LOG"
	chmod -R a+rX "$tmp/bin"
	mkdir -p "$NETPOL_CACHE"
	if ! mv -T "$tmp/bin" "$NETPOL_CACHE/bin" 2>/dev/null; then
		netpol_cached || die "cannot rename the build into $NETPOL_CACHE/bin"
		log "another start cached kube-router v$NETPOL_VERSION meanwhile; using it"
	fi
	rm -rf "$tmp"
	trap - EXIT INT TERM HUP
	log "built kube-router v$NETPOL_VERSION in $(($(date +%s) - t0)) s into $NETPOL_CACHE/bin"
}

# netpol_access gives the enforcer a certificate of its own and the read-only
# access it asks for (its informers watch these kinds, whatever it runs).
netpol_access() {
	cert netpol alfred-test-netpol
	kubeconfig netpol netpol
	kubectl apply -f - >/dev/null <<-EOF || fail_start "RBAC of the NetworkPolicy enforcer" kube-apiserver
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRole
		metadata:
		  name: alfred-test-netpol
		rules:
		- apiGroups: [""]
		  resources: [pods, namespaces, nodes, services, endpoints]
		  verbs: [get, list, watch]
		- apiGroups: [networking.k8s.io]
		  resources: [networkpolicies]
		  verbs: [get, list, watch]
		- apiGroups: [discovery.k8s.io]
		  resources: [endpointslices]
		  verbs: [get, list, watch]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRoleBinding
		metadata:
		  name: alfred-test-netpol
		roleRef:
		  apiGroup: rbac.authorization.k8s.io
		  kind: ClusterRole
		  name: alfred-test-netpol
		subjects:
		- apiGroup: rbac.authorization.k8s.io
		  kind: User
		  name: alfred-test-netpol
	EOF
}

# netpol_ready: the enforcer made its chains and its first full sync (the
# ACCEPT of the packets its policies marked is added at the end of it).
netpol_ready() { iptables -w 5 -S KUBE-ROUTER-FORWARD 2>/dev/null | grep -q 0x20000; }

# start_netpol makes bridged Pod traffic go through iptables (the old values of
# the br_netfilter switches are saved for stop), drops IPv6 on the Pod bridge
# and starts the enforcer, after the kubelet: it reads its Node at start.
start_netpol() {
	[ -f "/proc/sys/${BRIDGE_NF%% *}" ] || modprobe br_netfilter 2>/dev/null || true
	for s in $BRIDGE_NF; do
		[ -f "/proc/sys/$s" ] || fail_start "no /proc/sys/$s: the kernel lacks br_netfilter, which NetworkPolicies on a bridge need"
	done
	if [ ! -f "$STATE/bridge-nf" ]; then
		for s in $BRIDGE_NF; do echo "$s $(cat "/proc/sys/$s")"; done >"$STATE/bridge-nf"
	fi
	for s in $BRIDGE_NF; do echo 1 >"/proc/sys/$s"; done
	# The IPv6 hooks see the bridged frames through br_netfilter, with the
	# bridge as their interface (this kernel's bridge family lacks meta ibrname).
	nft -f - <<-EOF || fail_start "nft could not make the table ip6 $NFT_TABLE"
		table ip6 $NFT_TABLE {
		  chain forward { type filter hook forward priority 0; policy accept; iifname "$BRIDGE" drop; oifname "$BRIDGE" drop; }
		  chain input { type filter hook input priority 0; policy accept; iifname "$BRIDGE" drop; }
		  chain output { type filter hook output priority 0; policy accept; oifname "$BRIDGE" drop; }
		}
	EOF
	netpol_access
	# No health or metrics port (they listen on every address), IPv4 only.
	launch kube-router "$NETPOL_BIN" "$(mark kube-router)" --hostname-override="$NODE" \
		--run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
		--enable-ipv4=true --enable-ipv6=false --health-port=0 --metrics-port=0 \
		--service-cluster-ip-range="$SERVICE_RANGE" --service-node-port-range="$NODE_PORTS" --v=1
	wait_for kube-router "its iptables chains" netpol_ready
}

# netpol_cleanup removes what kube-router left in the filter table (the jumps
# from INPUT, FORWARD and OUTPUT, its chains) and its ipsets, in one
# iptables-restore --noflush: its own --cleanup-config also tears down IPVS
# and routing state that is not its here.
netpol_cleanup() {
	command -v iptables-save >/dev/null 2>&1 || return 0
	rules=$(iptables-save -t filter 2>/dev/null) || return 0
	chains=$(printf '%s\n' "$rules" | sed -n 's/^:\(KUBE-ROUTER-[A-Z]*\|KUBE-POD-FW-[A-Z0-9]*\|KUBE-NWPLCY-[A-Z0-9]*\) .*/\1/p')
	if [ -n "$chains" ]; then
		{
			echo '*filter'
			printf '%s\n' "$rules" | sed -n 's/^-A \(INPUT\|FORWARD\|OUTPUT\) \(.*-j KUBE-ROUTER-[A-Z]*\)$/-D \1 \2/p'
			for c in $chains; do echo "-F $c"; done
			for c in $chains; do echo "-X $c"; done
			echo COMMIT
		} | iptables-restore -w 5 --noflush || log "could not remove kube-router's iptables chains"
	fi
	command -v ipset >/dev/null 2>&1 || return 0
	for s in $(ipset list -n 2>/dev/null | grep -E '^KUBE-(SRC|DST)-'); do
		ipset destroy "$s" 2>/dev/null || log "could not destroy the ipset $s"
	done
}

# stop_netpol stops the enforcer and undoes what start_netpol changed (its
# saved switches say that it ran: a host's own kube-router is left alone).
stop_netpol() {
	stop_services kube-router
	[ -f "$STATE/bridge-nf" ] || return 0
	netpol_cleanup
	if command -v nft >/dev/null 2>&1 && nft list table ip6 "$NFT_TABLE" >/dev/null 2>&1; then
		nft delete table ip6 "$NFT_TABLE" || log "could not delete the nftables table ip6 $NFT_TABLE"
	fi
	while read -r s v; do
		[ "$(cat "/proc/sys/$s")" = "$v" ] || echo "$v" >"/proc/sys/$s" || log "could not restore $s=$v"
	done <"$STATE/bridge-nf"
	rm -f "$STATE/bridge-nf"
}

install_netpol_packages() {
	install_packages /usr/sbin/iptables:iptables /usr/sbin/ipset:ipset /usr/sbin/nft:nftables
}

# attach_netpol starts the enforcer beside a cluster of ours started without
# it (by an older k8s.sh). A failure stops only the enforcer's part.
attach_netpol() {
	[ "$(id -u)" = 0 ] || die "netpol start needs root (iptables, ipset, nft)"
	for s in etcd kube-apiserver containerd kubelet; do
		ours "$s" >/dev/null || die "netpol start: $s of ours is not running; run: $0 start"
	done
	if ours kube-router >/dev/null; then
		log "kube-router already runs (pid $(ours kube-router))"
		return 0
	fi
	install_netpol_packages
	netpol_cached || build_netpol
	APISERVER_PORT=$(sed -n 's#^ *server: https://[0-9.]*:\([0-9]*\)$#\1#p' "$STATE/admin.kubeconfig")
	[ -n "$APISERVER_PORT" ] || die "netpol start: no API server port in $STATE/admin.kubeconfig"
	trap 'stop_netpol' EXIT
	ALFRED_K8S_KEEP_FAILED=1 # fail_start must not tear the running cluster down
	t=$(now_ms)
	start_netpol
	trap - EXIT
	log "kube-router v$NETPOL_VERSION (NetworkPolicies) ready in $(($(now_ms) - t)) ms"
}

# ---------------------------------------------------------------- Pod network, Services, volumes

# start_bridge makes the Pod bridge with the host's address on it, NODE_IP,
# before the API server (which listens there) and the first Pod (the CNI
# bridge plugin finds it and makes NODE_IP the Pods' gateway). The kernel
# then routes between the bridge and the host's other interfaces (the
# plugin turns IP forwarding on for a gateway; stop restores the switch): the
# nftables table $NFT_FWD_TABLE drops every packet forwarded from the
# bridge to another interface or back, so that Pods reach each other and
# the host's addresses and nothing beyond.
start_bridge() {
	ip link add "$BRIDGE" type bridge || fail_start "ip link add $BRIDGE type bridge"
	ip addr add "$NODE_IP/${POD_SUBNET#*/}" dev "$BRIDGE" || fail_start "ip addr add $NODE_IP to $BRIDGE"
	ip link set "$BRIDGE" up || fail_start "ip link set $BRIDGE up"
	nft -f - <<-EOF || fail_start "nft could not make the table ip $NFT_FWD_TABLE"
		table ip $NFT_FWD_TABLE {
		  chain forward { type filter hook forward priority 0; policy accept; iifname "$BRIDGE" oifname != "$BRIDGE" drop; oifname "$BRIDGE" iifname != "$BRIDGE" drop; }
		}
	EOF
}

stop_bridge() {
	if command -v nft >/dev/null 2>&1 && nft list table ip "$NFT_FWD_TABLE" >/dev/null 2>&1; then
		nft delete table ip "$NFT_FWD_TABLE" || log "could not delete the nftables table ip $NFT_FWD_TABLE"
	fi
	if [ -d "/sys/class/net/$BRIDGE" ]; then ip link delete "$BRIDGE" 2>/dev/null || log "could not delete the bridge $BRIDGE"; fi
}

# start_volumes readies the controller manager's host-path provisioner
# (--enable-hostpath-provisioner): it makes each volume a folder
# $HOSTPATH_PV/UUID, a path fixed in its code, which links here into the
# state folder (volumes/, deleted by stop). It makes the folder root's, mode
# 0750, and the kubelet changes no owner on a hostPath volume (fsGroup does
# not apply), so a Pod of a user other than root could not write to its
# volume: inotifywait (Debian's inotify-tools) sees each new folder and a
# shell opens it to every user (mode 0777), as the small real provisioners
# do (local-path-provisioner's mkdir -m 0777), before its Pod can start (the
# volume is made before the claim is bound, the Pod scheduled after).
start_volumes() {
	if [ -e "$HOSTPATH_PV" ] || [ -L "$HOSTPATH_PV" ]; then
		case $(readlink "$HOSTPATH_PV" 2>/dev/null) in
		"$STATE/volumes") ;;
		*) fail_start "$HOSTPATH_PV exists and is not a link of ours: the host-path provisioner's folder is taken" ;;
		esac
		rm -f "$HOSTPATH_PV"
	fi
	mkdir -p "$STATE/volumes"
	ln -s "$STATE/volumes" "$HOSTPATH_PV" || fail_start "ln -s $STATE/volumes $HOSTPATH_PV"
	cat >"$STATE/volume-mode" <<-'EOF'
		#!/bin/sh
		# Written by scripts/k8s.sh: each new folder of the volumes folder $1
		# is opened to every user. Stop ends the process group.
		inotifywait -m -q -e create -e moved_to --format %f "$1" | while read -r name; do
			[ -d "$1/$name" ] && chmod 0777 "$1/$name"
		done
	EOF
	launch volumes sh "$STATE/volume-mode" "$(mark volumes)"
}

stop_volumes() {
	# The shell, inotifywait and the loop: the whole group (launch's setsid).
	# dash's kill takes no "--": a negative pid follows the signal directly.
	if pid=$(ours volumes); then kill -TERM "-$pid" 2>/dev/null || true; fi
	stop_services volumes
	case $(readlink "$HOSTPATH_PV" 2>/dev/null) in "$STATE/volumes") rm -f "$HOSTPATH_PV" ;; esac
}

# storage_class makes the cluster's default StorageClass, the host-path
# provisioner's: a PersistentVolumeClaim without a class gets a volume.
storage_class() {
	kubectl apply -f - >/dev/null <<-EOF || fail_start "creation of the StorageClass $STORAGE_CLASS" kube-apiserver
		apiVersion: storage.k8s.io/v1
		kind: StorageClass
		metadata:
		  name: $STORAGE_CLASS
		  annotations:
		    storageclass.kubernetes.io/is-default-class: "true"
		provisioner: kubernetes.io/host-path
		reclaimPolicy: Delete
		volumeBindingMode: Immediate
	EOF
}

# start_proxy starts kube-proxy, one for both nodes (they share the host's
# network), in iptables mode (Debian's iptables, as kube-router's): the
# Services' ClusterIPs, the Service default/kubernetes (10.96.0.1:443, the
# API server on NODE_IP) for the Pods' InClusterConfig among them. It
# leaves the host's conntrack sysctls alone and sets no route_localnet
# (no NodePort on loopback); NodePorts only on NODE_IP.
start_proxy() {
	kubeconfig kube-proxy kube-proxy
	cat >"$STATE/kube-proxy.yaml" <<-EOF
		# Written by scripts/k8s.sh; deleted by its stop.
		apiVersion: kubeproxy.config.k8s.io/v1alpha1
		kind: KubeProxyConfiguration
		clientConnection:
		  kubeconfig: $STATE/kube-proxy.kubeconfig
		mode: iptables
		clusterCIDR: $POD_SUBNET
		hostnameOverride: "$NODE"
		healthzBindAddress: 127.0.0.1:$KPROXY_PORT
		metricsBindAddress: 127.0.0.1:$KPROXY_METRICS_PORT
		nodePortAddresses: ["$NODE_IP/32"]
		conntrack:
		  maxPerCore: 0
		  min: 0
		  tcpEstablishedTimeout: 0s
		  tcpCloseWaitTimeout: 0s
		iptables:
		  localhostNodePorts: false
		logging:
		  verbosity: 1
	EOF
	launch kube-proxy "$BIN/kube-proxy" "$(mark kube-proxy)"
}

wait_proxy() {
	wait_for kube-proxy "healthz answer" curl -fsS "http://127.0.0.1:$KPROXY_PORT/healthz"
}

# stop_proxy stops kube-proxy and removes its iptables chains
# (kube-proxy --cleanup: its KUBE-* chains of every mode, nothing else).
stop_proxy() {
	was=$(ours kube-proxy) || was=""
	stop_services kube-proxy
	if [ -n "$was" ] && [ -x "$BIN/kube-proxy" ]; then
		"$BIN/kube-proxy" --cleanup >"$LOGS/kube-proxy-cleanup.log" 2>&1 ||
			log "kube-proxy --cleanup failed: see $LOGS/kube-proxy-cleanup.log"
	fi
}

# ---------------------------------------------------------------- smoke test

setup_namespace() {
	kubectl apply -f - >/dev/null <<-EOF || fail_start "creation of the namespace $NAMESPACE" kube-apiserver
		apiVersion: v1
		kind: Namespace
		metadata:
		  name: $NAMESPACE
		  labels:
		    pod-security.kubernetes.io/enforce: restricted
		    pod-security.kubernetes.io/warn: restricted
	EOF
	# The ServiceAccount admission refuses Pods until the controller made "default".
	wait_for kube-controller-manager "ServiceAccount $NAMESPACE/default" kubectl -n "$NAMESPACE" get serviceaccount default
}

# smoke_pod POD NODE creates a restricted Pod of the test image that runs
# `echo ok` on NODE (a node selector: the scheduler places it).
smoke_pod() {
	pod=$1
	kubectl -n "$NAMESPACE" delete pod "$pod" --ignore-not-found --wait=true >/dev/null 2>&1 || true
	kubectl -n "$NAMESPACE" apply -f - >/dev/null <<-EOF || fail_start "creation of the smoke Pod"
		apiVersion: v1
		kind: Pod
		metadata:
		  name: $pod
		spec:
		  restartPolicy: Never
		  nodeSelector:
		    kubernetes.io/hostname: "$2"
		  automountServiceAccountToken: false
		  securityContext:
		    runAsNonRoot: true
		    runAsUser: 1000
		    runAsGroup: 1000
		    seccompProfile:
		      type: RuntimeDefault
		  containers:
		  - name: smoke
		    image: $IMAGE
		    imagePullPolicy: Never
		    command: ["echo", "ok"]
		    securityContext:
		      allowPrivilegeEscalation: false
		      capabilities:
		        drop: ["ALL"]
	EOF
}

# smoke_wait POD KUBELET waits for the Pod to succeed and reads its log back
# through the API server (and so its node's kubelet, the service KUBELET),
# then deletes it.
smoke_wait() {
	pod=$1
	deadline=$(($(date +%s) + WAIT))
	while :; do
		phase=$(kubectl -n "$NAMESPACE" get pod "$pod" -o 'jsonpath={.status.phase}' 2>/dev/null) || phase=""
		case $phase in
		Succeeded) break ;;
		Failed)
			kubectl -n "$NAMESPACE" describe pod "$pod" >&2 || true
			fail_start "the smoke Pod $pod failed" "$2"
			;;
		esac
		if [ "$(date +%s)" -ge "$deadline" ]; then
			kubectl -n "$NAMESPACE" describe pod "$pod" >&2 || true
			fail_start "the smoke Pod $pod did not succeed within ${WAIT}s (phase '$phase')" "$2"
		fi
		sleep 0.3
	done
	out=$(kubectl -n "$NAMESPACE" logs "$pod" 2>&1) || fail_start "kubectl logs of the smoke Pod $pod: $out" kube-apiserver
	[ "$out" = ok ] || fail_start "the smoke Pod $pod logged '$out', not 'ok'"
	kubectl -n "$NAMESPACE" delete pod "$pod" --wait=false >/dev/null 2>&1 || true
}

# smoke_test runs a smoke Pod on each node at once.
smoke_test() {
	smoke_pod alfred-smoke "$NODE"
	smoke_pod alfred-smoke-2 "$NODE2"
	smoke_wait alfred-smoke kubelet
	smoke_wait alfred-smoke-2 kubelet2
}

# ---------------------------------------------------------------- import

# image_ref prints the full name containerd gives IMAGE (as Docker does):
# docker.io/library/ for a bare name, docker.io/ for a name without a registry
# host, :latest without a tag or digest.
image_ref() {
	ref=$1
	case ${ref%%/*} in
	"$ref") ref=docker.io/library/$ref ;;
	*.* | *:* | localhost) ;;
	*) ref=docker.io/$ref ;;
	esac
	case ${ref##*/} in
	*:* | *@*) ;;
	*) ref=$ref:latest ;;
	esac
	echo "$ref"
}

# import_docker_images IMAGE... copies the images from the suite's Docker
# daemon into the running cluster's containerd, one archive at a time (under
# the state folder, deleted after each).
import_docker_images() {
	[ $# -gt 0 ] || die "import: name at least one image: $0 import IMAGE..."
	if ! running || [ ! -f "$ENVFILE" ]; then die "import: no cluster of ours is running; run: $0 start"; fi
	host=${ALFRED_TEST_DOCKER_HOST:-}
	[ -n "$host" ] || die "import: ALFRED_TEST_DOCKER_HOST is unset: start the suite's Docker daemon (scripts/dockerd.sh start) and export what it prints"
	command -v docker >/dev/null 2>&1 || die "import: the docker CLI is missing (Debian's docker.io, which scripts/dockerd.sh installs)"
	T0=$(now_ms)
	archive=$STATE/import.$$.tar
	trap 'rm -f "$archive"' EXIT
	trap 'exit 1' INT TERM HUP
	for image in "$@"; do
		# The cluster's own images are made by start, not the daemon's
		# namesakes (scripts/dockerd.sh's test image differs from ours).
		case $(image_ref "$image") in
		"$(image_ref "$IMAGE")" | "$(image_ref "$PAUSE_IMAGE")") die "import: $image is the cluster's own image (start makes it); not replacing it" ;;
		esac
	done
	for image in "$@"; do
		t=$(now_ms)
		DOCKER_HOST=$host docker image inspect --format '{{.Id}}' "$image" >/dev/null 2>&1 ||
			die "import: $image is not an image of the Docker daemon at $host (scripts/images.sh builds the suite's)"
		DOCKER_HOST=$host docker save -o "$archive" "$image" || die "import: docker save $image failed"
		size=$(($(stat -c %s "$archive") / 1048576))
		t_save=$(($(now_ms) - t))
		t=$(now_ms)
		ref=$(image_ref "$image")
		for c in ctr_k8s ctr_node2; do
			out=$($c images import "$archive" 2>&1) || die "import: $c images import of $image failed: $out"
			$c images check "name==$ref" | grep -q complete ||
				die "import: $ref is missing from a node's containerd ($c) after the import: $out"
		done
		rm -f "$archive"
		log "imported $image ($size MiB) as $ref: docker save $t_save ms, ctr import into both nodes $(($(now_ms) - t)) ms"
	done
	rm -f "$archive"
	trap - EXIT INT TERM HUP
	log "imported $# image(s) in $(($(now_ms) - T0)) ms"
}

# ---------------------------------------------------------------- start / stop

write_env() {
	umask 077
	cat >"$ENVFILE" <<-EOF
		ALFRED_TEST_KUBECONFIG=$STATE/admin.kubeconfig
		ALFRED_TEST_K8S_NAMESPACE=$NAMESPACE
		ALFRED_TEST_K8S_VERSION=v$VERSION
		ALFRED_TEST_K8S_IMAGE=$IMAGE
		ALFRED_TEST_K8S_NODE=$NODE
		ALFRED_TEST_K8S_NODES='$NODE $NODE2'
		ALFRED_TEST_K8S_POD_BRIDGE=$BRIDGE
		ALFRED_TEST_K8S_NODE_IP=$NODE_IP
		ALFRED_TEST_K8S_STORAGE_CLASS=$STORAGE_CLASS
		ALFRED_TEST_K8S_AUDIT_LOG=$LOGS/audit.log
		ALFRED_TEST_K8S_KUBECTL=$BIN/kubectl
		ALFRED_TEST_K8S_POD_PIDS_LIMIT=$POD_PIDS_LIMIT
	EOF
	umask 022
}

print_env() { sed 's/^/export /' "$ENVFILE"; }

running() {
	for s in $SERVICES; do ours "$s" >/dev/null || return 1; done
}

start() {
	[ "$(id -u)" = 0 ] || die "start needs root (containerd, the kubelet and cgroups)"
	case $POD_PIDS_LIMIT in
	'' | *[!0-9]* | 0*) die "ALFRED_K8S_POD_PIDS_LIMIT=$POD_PIDS_LIMIT: want a positive number of processes" ;;
	esac
	if running && [ -f "$ENVFILE" ]; then
		log "cluster already running (state $STATE)"
		print_env
		return 0
	fi
	install_packages /usr/bin/etcd:etcd-server /usr/bin/containerd:containerd /usr/sbin/runc:runc \
		/usr/lib/cni/bridge:containernetworking-plugins /usr/bin/openssl:openssl /bin/busybox:busybox-static \
		/usr/bin/curl:curl /usr/bin/inotifywait:inotify-tools
	install_netpol_packages
	if k8s_cached; then
		log "using the cached Kubernetes v$VERSION in $BIN"
	else
		build_k8s
	fi
	if netpol_cached; then log "using the cached kube-router v$NETPOL_VERSION in $NETPOL_CACHE/bin"; else build_netpol; fi
	T0=$(now_ms)
	reset_state
	mkdir -p "$STATE" "$LOGS" || die "cannot create the state folder $STATE"
	chmod 0711 "$STATE"
	: >"$MARKER"
	t=$(now_ms)
	make_pki
	for p in ETCD_PORT ETCD_PEER_PORT APISERVER_PORT KCM_PORT SCHED_PORT KUBELET_PORT KUBELET2_PORT KPROXY_PORT KPROXY_METRICS_PORT; do pick_port $p; done
	kubeconfig admin admin
	kubeconfig controller-manager controller-manager
	kubeconfig scheduler scheduler
	kubeconfig kubelet kubelet
	kubeconfig kubelet2 kubelet2
	log "certificates and kubeconfigs made in $(($(now_ms) - t)) ms"
	t=$(now_ms)
	start_bridge
	start_volumes
	log "Pod bridge $BRIDGE ($NODE_IP) and the volumes folder ready in $(($(now_ms) - t)) ms"
	t=$(now_ms)
	start_etcd
	log "etcd $(etcd --version | sed -n 's/^etcd Version: //p') ready in $(($(now_ms) - t)) ms on 127.0.0.1:$ETCD_PORT"
	# containerd starts and the images are imported while the API server
	# starts (it takes the longest).
	t_api=$(now_ms)
	start_apiserver
	t=$(now_ms)
	start_containerd
	log "containerd $(containerd --version | cut -d' ' -f3) ready in $(($(now_ms) - t)) ms"
	t=$(now_ms)
	start_containerd2
	log "containerd of node $NODE2 ready in $(($(now_ms) - t)) ms"
	t=$(now_ms)
	import_images
	log "imported $IMAGE and $PAUSE_IMAGE into both nodes in $(($(now_ms) - t)) ms"
	wait_apiserver
	log "kube-apiserver v$VERSION ready in $(($(now_ms) - t_api)) ms on https://$NODE_IP:$APISERVER_PORT"
	t=$(now_ms)
	start_proxy
	start_controllers
	log "kube-controller-manager and kube-scheduler ready in $(($(now_ms) - t)) ms"
	t=$(now_ms)
	start_kubelet
	log "kubelet ready, node $NODE Ready in $(($(now_ms) - t)) ms"
	t=$(now_ms)
	start_kubelet2
	log "kubelet ready, node $NODE2 Ready in $(($(now_ms) - t)) ms"
	t=$(now_ms)
	start_netpol
	log "kube-router v$NETPOL_VERSION (NetworkPolicies) ready in $(($(now_ms) - t)) ms"
	t=$(now_ms)
	wait_proxy
	log "kube-proxy (iptables) ready in $(($(now_ms) - t)) ms"
	t=$(now_ms)
	storage_class
	setup_namespace
	smoke_test
	log "smoke Pods ran 'echo ok' in $NAMESPACE on $NODE and $NODE2 in $(($(now_ms) - t)) ms"
	write_env
	log "cluster ready in $(($(now_ms) - T0)) ms (state $STATE, kubeconfig $STATE/admin.kubeconfig)"
	print_env
}

# node_tasks lists what runs in the containerd of either node.
node_tasks() {
	if ours containerd >/dev/null; then ctr_k8s tasks ls -q 2>/dev/null || true; fi
	if ours containerd2 >/dev/null; then ctr_node2 tasks ls -q 2>/dev/null || true; fi
}

# drain_pods deletes every Pod while the kubelets still run, so that they stop
# the containers and tear their network down themselves.
drain_pods() {
	ours kube-apiserver >/dev/null || return 0
	{ ours kubelet >/dev/null && ours containerd >/dev/null; } ||
		{ ours kubelet2 >/dev/null && ours containerd2 >/dev/null; } || return 0
	[ -f "$STATE/admin.kubeconfig" ] || return 0
	kubectl delete pods --all --all-namespaces --grace-period=2 --wait=false >/dev/null 2>&1 || return 0
	i=0
	while [ $i -lt 100 ]; do
		[ -z "$(node_tasks)" ] && return 0
		sleep 0.3
		i=$((i + 1))
	done
	log "some containers still run after deleting the Pods; killing them"
}

# kill_tasks SERVICE CTR kills whatever still runs in the containerd SERVICE
# of ours (ctr function CTR) and deletes it.
kill_tasks() {
	ours "$1" >/dev/null || return 0
	for t in $($2 tasks ls -q 2>/dev/null); do
		$2 tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
	done
	for t in $($2 tasks ls -q 2>/dev/null); do
		$2 tasks delete -f "$t" >/dev/null 2>&1 || true
	done
	for c in $($2 containers ls -q 2>/dev/null); do
		$2 containers delete "$c" >/dev/null 2>&1 || true
	done
}

# teardown stops everything of ours and undoes the host changes; it leaves the
# state folder (stop deletes it).
teardown() {
	drain_pods
	stop_netpol
	stop_proxy
	stop_services kubelet kubelet2 kube-scheduler kube-controller-manager
	stop_volumes
	kill_tasks containerd ctr_k8s
	kill_tasks containerd2 ctr_node2
	stop_services containerd containerd2 kube-apiserver
	stop_services etcd
	# Shims outlive containerd: a shim of ours runs with our state folder in its
	# command line (-address $CTRD_SOCK or $CTRD2_SOCK).
	for sock in "$CTRD_SOCK" "$CTRD2_SOCK"; do
		for p in $(pgrep -f "containerd-shim-runc-v2 -namespace k8s.io -address $sock" 2>/dev/null || true); do
			log "killing the leftover containerd shim pid $p"
			kill -KILL "$p" 2>/dev/null || true
		done
	done
	restore_sysctls
	remove_cgroups
	stop_bridge
	# The kubelet's legacy symlinks to the container logs and the CNI results
	# of our network, ours only; then the folders that a start made.
	for l in /var/log/containers/*.log; do
		[ -L "$l" ] || continue
		case "$(readlink "$l")" in "$STATE"/*) rm -f "$l" ;; esac
	done
	rm -f /var/lib/cni/results/alfred-test-*
	if [ -f "$STATE/host-dirs" ]; then
		while read -r d; do
			case " $HOST_DIRS " in *" $d "*) rm -rf "$d" ;; esac
		done <"$STATE/host-dirs"
		rm -f "$STATE/host-dirs"
	fi
	# Mounts under the state folder (overlay snapshots, network namespaces, Pod
	# volumes), deepest first.
	for m in $(awk -v s="$STATE/" 'index($2, s) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
	done
}

# reset_state stops what a former start left and deletes its state folder; it
# refuses to touch a folder that this script did not make.
reset_state() {
	[ -e "$STATE" ] || return 0
	if [ ! -f "$MARKER" ] && [ -n "$(ls -A "$STATE")" ]; then
		die "not touching $STATE: it has no $(basename "$MARKER") of ours; remove it or set ALFRED_K8S_STATE"
	fi
	teardown
	if awk -v s="$STATE/" 'index($2, s) == 1 { f = 1 } END { exit !f }' /proc/mounts; then
		die "mounts remain under $STATE; not deleting it"
	fi
	rm -rf "$STATE"
}

stop() {
	if [ ! -e "$STATE" ]; then
		log "no cluster of ours (no $STATE)"
		return 0
	fi
	t=$(now_ms)
	reset_state
	log "stopped in $(($(now_ms) - t)) ms"
}

status() {
	rc=0
	for s in $SERVICES; do
		if pid=$(ours "$s"); then
			echo "$s: running (pid $pid)"
		else
			echo "$s: not running"
			rc=1
		fi
	done
	if [ $rc = 0 ]; then
		kubectl get node "$NODE" "$NODE2" -o wide || rc=1
	fi
	return $rc
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
env)
	if ! running || [ ! -f "$ENVFILE" ]; then die "no cluster of ours is running; run: $0 start"; fi
	print_env
	;;
import)
	shift
	import_docker_images "$@"
	;;
build)
	if k8s_cached; then log "Kubernetes v$VERSION is cached in $BIN"; else build_k8s; fi
	if netpol_cached; then log "kube-router v$NETPOL_VERSION is cached in $NETPOL_CACHE/bin"; else build_netpol; fi
	;;
netpol)
	case "${2:-}" in
	start) attach_netpol ;;
	stop) stop_netpol ;;
	*) die "usage: $0 netpol start|stop" ;;
	esac
	;;
*)
	echo "usage: $0 start|env|status|stop|build|import IMAGE...|netpol start|stop" >&2
	exit 2
	;;
esac
