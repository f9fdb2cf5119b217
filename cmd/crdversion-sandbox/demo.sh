#!/bin/sh
# The walk-through that `make demo` runs inside the sandbox: KUBECONFIG points
# at the sandbox and bin/ (with kubectl-crdversion) is first on PATH. Each
# command is printed as a user would type it, then run.
set -eu

crdversion() {
	printf '\n$ kubectl crdversion %s\n' "$*"
	if command -v kubectl >/dev/null 2>&1; then
		kubectl crdversion "$@"
	else
		kubectl-crdversion "$@"
	fi
}

crdversion version

# Gateway API v0.6.2 as released: HTTPRoute serves v1alpha2 (deprecated) and
# stores v1beta1, with one example route.
crdversion status httproutes.gateway.networking.k8s.io

# Add v1 with v1beta1's schema (same schema, so conversion None is safe)...
crdversion add-version httproutes.gateway.networking.k8s.io v1 --from v1beta1
crdversion status httproutes

# ...and make it the storage version, after checking every route at v1.
crdversion promote-storage httproutes.gateway.networking.k8s.io v1
crdversion status httproute

# Rewrite every stored route at v1, then trim storedVersions to [v1].
crdversion migrate httproutes.gateway.networking.k8s.io
crdversion status httproutes.gateway.networking.k8s.io -o jsonpath='{.state}{" storedVersions="}{.storedVersions}{" next: "}{.next.command}{"\n"}'

# ReferenceGrant stores v1alpha2 and serves v1beta1 beside it: a promotion
# is due. A server-side dry run runs every check and writes nothing.
crdversion promote-storage referencegrants.gateway.networking.k8s.io v1beta1 --dry-run=server
crdversion status referencegrants.gateway.networking.k8s.io -o jsonpath='{.state}{" "}{.next.command}{"\n"}'
