# shellcheck shell=bash
# rootfs.sh: sourced by the scripts that build a test image from
# busybox-static (dockerd.sh, k8s.sh), so that its users are one fact.

# write_users ROOTFS writes the image's /etc/passwd and /etc/group: root, the
# agent user 1000 the sandboxes run as, and nobody.
write_users() {
	cat >"$1/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
		agent:x:1000:1000:agent:/home/agent:/bin/sh
		nobody:x:65534:65534:nobody:/nonexistent:/bin/false
	EOF
	cat >"$1/etc/group" <<-'EOF'
		root:x:0:
		agent:x:1000:
		nogroup:x:65534:
	EOF
}
