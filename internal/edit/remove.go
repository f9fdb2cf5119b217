package edit

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
)

// RemoveVersion removes version from spec.versions: the last step of
// retiring it ("Versions in CustomResourceDefinitions", removing an old
// version). Preflight: version is not served (clients were moved off it and
// it was unserved first), not the storage version, and not in
// status.storedVersions (the API server rejects the update otherwise:
// every stored version must stay in spec.versions, so objects must be
// migrated first); at least one version remains. The removed version is
// recorded in the crdversion.kubectl.io/retired-versions annotation so that
// status can tell S6 (retired) from S0. Removing a version that is not in
// spec.versions is a no-op ("already done") when storedVersions does not
// list it either.
func RemoveVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) *Result {
	out := crd.DeepCopy()
	r := &Result{Edited: out}
	cs := &r.Checks
	i := slices.IndexFunc(out.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })
	stored := slices.Contains(crd.Status.StoredVersions, version)
	if i < 0 {
		if stored {
			restore := lifecycle.RestoreUnserved(crd.Name, version)
			cs.add("NotStored", Fail, "%s is not in spec.versions but status.storedVersions lists it: objects stored at it are unreadable; restore it unserved, keeping every field they hold (%s), then run kubectl crdversion migrate %s",
				version, restore, crd.Name).Run = []lifecycle.Command{restore, lifecycle.Crdversion("migrate", crd.Name)}
			return r
		}
		r.NoOp = true
		r.Summary = fmt.Sprintf("%s is not in spec.versions; nothing to do", version)
		return r
	}
	v := out.Spec.Versions[i]
	if v.Served {
		cs.add("NotServed", Fail, "%s is still served: stop serving it first (kubectl crdversion unserve %s %s), after checking that no client uses it", version, crd.Name, version).Run =
			[]lifecycle.Command{lifecycle.Crdversion("unserve", crd.Name, version)}
	} else {
		cs.add("NotServed", Pass, "%s is not served", version)
	}
	if v.Storage {
		cs.add("NotStorage", Fail, "%s is the storage version: promote another version first (kubectl crdversion promote-storage %s <version>)", version, crd.Name).Run =
			[]lifecycle.Command{lifecycle.Crdversion("promote-storage", crd.Name, lifecycle.PlaceholderVersion)}
	} else {
		cs.add("NotStorage", Pass, "%s is not the storage version", version)
	}
	if stored {
		cs.add("NotStored", Fail, "status.storedVersions [%s] lists %s: objects may still be stored at it, and the API server rejects the removal; run kubectl crdversion migrate %s first",
			strings.Join(crd.Status.StoredVersions, ", "), version, crd.Name).Run = []lifecycle.Command{lifecycle.Crdversion("migrate", crd.Name)}
	} else {
		cs.add("NotStored", Pass, "status.storedVersions [%s] does not list %s", strings.Join(crd.Status.StoredVersions, ", "), version)
	}
	if len(out.Spec.Versions) == 1 {
		cs.add("AnotherVersion", Fail, "%s is the only version", version)
	}
	out.Spec.Versions = slices.Delete(out.Spec.Versions, i, i+1)
	retired := strings.Split(out.Annotations[lifecycle.RetiredVersionsAnnotation], ",")
	retired = slices.DeleteFunc(retired, func(s string) bool { s = strings.TrimSpace(s); return s == "" || s == version })
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[lifecycle.RetiredVersionsAnnotation] = strings.Join(append(retired, version), ",")
	defaultVersionCheck(cs, crd, out)
	r.Summary = fmt.Sprintf("remove %s from spec.versions", version)
	return r
}
