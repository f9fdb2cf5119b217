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
# stores v1beta1; ReferenceGrant stores v1alpha2 and serves v1beta1 beside it.
crdversion status httproutes.gateway.networking.k8s.io
crdversion status referencegrant
crdversion status referencegrants.gateway.networking.k8s.io -o jsonpath='{.state}{" "}{.next.command}{"\n"}'
