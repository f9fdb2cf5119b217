#!/usr/bin/env bash
# install.sh (the action's first step): download the release's archive for
# this runner and checksums.txt, check the archive's sha256, extract the
# binary into $RUNNER_TEMP and put it on $GITHUB_PATH. Inputs:
# CRDVERSION_VERSION (a tag), CRDVERSION_RELEASE_URL (the assets' base).
set -euo pipefail

version=${CRDVERSION_VERSION:?the action input version is required (a release tag such as v0.3.0)}
base=${CRDVERSION_RELEASE_URL:?the action input release-url is empty}
case "${RUNNER_OS:-Linux}" in
Linux) os=linux ;;
macOS) os=darwin ;;
*) echo "::error::kubectl-crdversion's action runs on Linux and macOS runners, not ${RUNNER_OS}" >&2; exit 1 ;;
esac
case "${RUNNER_ARCH:-X64}" in
X64) arch=amd64 ;;
ARM64) arch=arm64 ;;
*) echo "::error::no kubectl-crdversion release for runner architecture ${RUNNER_ARCH}" >&2; exit 1 ;;
esac

archive="kubectl-crdversion_${version}_${os}_${arch}.tar.gz"
dir=$(mktemp -d "${RUNNER_TEMP:-/tmp}/kubectl-crdversion.XXXXXX")
for asset in "$archive" checksums.txt; do
	if ! curl -fsSL --retry 3 -o "$dir/$asset" "$base/$version/$asset"; then
		echo "::error::downloading $base/$version/$asset failed: is $version a release tag (with its v)?" >&2
		exit 1
	fi
done

want=$(awk -v name="$archive" '$2 == name { print $1 }' "$dir/checksums.txt")
if [ -z "$want" ]; then
	echo "::error::checksums.txt of $version lists no $archive" >&2
	exit 1
fi
if command -v sha256sum >/dev/null; then
	got=$(sha256sum "$dir/$archive" | awk '{ print $1 }')
else
	got=$(shasum -a 256 "$dir/$archive" | awk '{ print $1 }')
fi
if [ "$got" != "$want" ]; then
	echo "::error::$archive has sha256 $got, but checksums.txt of $version says $want: not installed" >&2
	exit 1
fi

tar -xzf "$dir/$archive" -C "$dir" kubectl-crdversion
echo "$dir" >> "${GITHUB_PATH:?}"
"$dir/kubectl-crdversion" version
