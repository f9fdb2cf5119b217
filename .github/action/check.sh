#!/usr/bin/env bash
# check.sh (the action's second step): run check-upgrade with the action's
# arguments twice — as text, which the log shows and whose findings the
# runner turns into annotations (GITHUB_ACTIONS=true), and as SARIF into
# the sarif-file — and record the exit code as the step's output exit-code.
# The step itself succeeds, so that the SARIF upload runs; the action's
# last step fails the job on a non-zero exit code. Inputs: CRDVERSION_ARGS
# (split at whitespace: no quoting, no globbing), CRDVERSION_SARIF.
set -uo pipefail

set -f
# shellcheck disable=SC2206 # word splitting of the arguments is wanted
args=(${CRDVERSION_ARGS:?the action input args is required})
set +f
sarif=${CRDVERSION_SARIF:-crdversion.sarif}

kubectl-crdversion check-upgrade "${args[@]}"
code=$?
echo "exit-code=$code" >> "${GITHUB_OUTPUT:?}"
if [ "$code" -le 1 ]; then
	# The findings are annotated once, by the run above.
	GITHUB_ACTIONS= kubectl-crdversion check-upgrade "${args[@]}" -o sarif > "$sarif"
	sarif_code=$?
	if [ "$sarif_code" -ne "$code" ]; then
		echo "::error::check-upgrade -o sarif exited $sarif_code, the text run $code" >&2
		echo "exit-code=2" >> "$GITHUB_OUTPUT"
	fi
fi
exit 0
