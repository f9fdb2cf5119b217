package references

import (
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// HelmManifest is an object of the manifest that a Helm release record
// keeps (the Secret or ConfigMap sh.helm.release.v1.NAME.vREVISION of
// Helm's storage, type helm.sh/release.v1). `helm upgrade` and `helm
// rollback` build the objects of the release's current record before they
// change anything; one whose kind the API server does not serve at the
// recorded apiVersion fails them with "unable to build kubernetes objects
// from current release manifest: resource mapping not found … no matches
// for kind … in version …" (helm.sh/helm/v4 pkg/action, Upgrade and
// Rollback; established on kube-apiserver v1.37.2 by the e2e test
// TestHelmReleaseRecordOfARemovedVersion).
const HelmManifest Field = "manifest"

// Release is the current record of one Helm release: the one `helm
// upgrade` reads as the release's current state — the latest revision
// when it is deployed, else the latest deployed revision, else the latest
// (helm.sh/helm/v4 action.Upgrade).
type Release struct {
	// Namespace and Name are the release's.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Revision is the record's revision; Status its status (deployed,
	// failed, …).
	Revision int    `json:"revision"`
	Status   string `json:"status"`
	// Resource is where Helm keeps the record: v1 secrets (the default
	// driver) or v1 configmaps; Record the object's name.
	Resource Resource `json:"resource"`
	Record   string   `json:"record"`
	// Manifest is the rendered manifest of the record.
	Manifest string `json:"-"`
}

// String is "NAMESPACE/NAME revision REVISION".
func (r Release) String() string {
	return fmt.Sprintf("%s/%s revision %d", r.Namespace, r.Name, r.Revision)
}

// HelmRecordResources are the resources whose objects can be Helm release
// records, one per storage driver that keeps them in the cluster.
var HelmRecordResources = []Resource{{Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "configmaps"}}

// separator is the line between two documents of a manifest (what Helm's
// releaseutil.SplitManifests splits on, kept here so that a document's
// bytes can be rewritten in place).
var separator = regexp.MustCompile(`(?m)^---[ \t]*`)

// manifestDoc is one document of a manifest: its position and what it
// declares.
type manifestDoc struct {
	start, end int
	apiVersion string
	kind       string
	name       string
}

// documents splits manifest at its "---" lines and reads each document's
// apiVersion, kind and metadata.name; a document that does not parse as
// YAML, or is empty, is left out (Helm cannot build it either, and the
// failure is not about a version).
func documents(manifest string) []manifestDoc {
	var out []manifestDoc
	start := 0
	bounds := append(separator.FindAllStringIndex(manifest, -1), []int{len(manifest), len(manifest)})
	for _, b := range bounds {
		doc := manifestDoc{start: start, end: b[0]}
		start = b[1]
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		text := manifest[doc.start:doc.end]
		if strings.TrimSpace(text) == "" || yaml.Unmarshal([]byte(text), &head) != nil || head.Kind == "" {
			continue
		}
		doc.apiVersion, doc.kind, doc.name = head.APIVersion, head.Kind, head.Metadata.Name
		out = append(out, doc)
	}
	return out
}

// ManifestObjects are the objects of manifest that match: each one's
// apiVersion, kind and metadata.name as an OwnerReference (no uid), with
// its index among the manifest's documents.
func ManifestObjects(manifest string, match func(metav1.OwnerReference) bool) []IndexedRef {
	var out []IndexedRef
	for i, d := range documents(manifest) {
		ref := metav1.OwnerReference{APIVersion: d.apiVersion, Kind: d.kind, Name: d.name}
		if match(ref) {
			out = append(out, IndexedRef{Index: i, Ref: ref})
		}
	}
	return out
}

// IndexedRef is a reference and its index (of a document in a manifest).
type IndexedRef struct {
	Index int
	Ref   metav1.OwnerReference
}

// apiVersionLine is a top-level apiVersion line, quoted or not.
var apiVersionLine = regexp.MustCompile(`(?m)^apiVersion:[ \t]*(.*?)[ \t]*$`)

// RewriteManifest returns manifest with the apiVersion of every document
// that declares kind at apiVersion from replaced by to, and the number of
// documents rewritten. Only that line of those documents changes; every
// other byte (comments, order, the other documents) is kept.
func RewriteManifest(manifest, from, kind, to string) (string, int) {
	var b strings.Builder
	n, last := 0, 0
	for _, d := range documents(manifest) {
		if d.apiVersion != from || d.kind != kind {
			continue
		}
		text := manifest[d.start:d.end]
		loc := apiVersionLine.FindStringSubmatchIndex(text)
		if loc == nil || strings.Trim(text[loc[2]:loc[3]], `"'`) != from {
			continue
		}
		b.WriteString(manifest[last : d.start+loc[0]])
		b.WriteString("apiVersion: " + to)
		last = d.start + loc[1]
		n++
	}
	b.WriteString(manifest[last:])
	return b.String(), n
}
