package e2e

import (
	"context"
	"encoding/json"
	"testing"

	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// editStoredCRD changes a CRD directly in etcd, bypassing the API server's
// validation, to build states that only old API servers or hand edits could
// create. The object is written back as JSON, which the API server's storage
// decoder accepts beside protobuf.
func editStoredCRD(t *testing.T, name string, edit func(*apiextensionsv1.CustomResourceDefinition)) {
	t.Helper()
	ctx := context.Background()
	key := srv.EtcdPrefix + "/apiextensions.k8s.io/customresourcedefinitions/" + name
	resp, err := srv.Etcd.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s from etcd: %v (%d keys)", key, err, len(resp.Kvs))
	}
	scheme := runtime.NewScheme()
	apiextensionsinstall.Install(scheme)
	// The API server may store CRDs at another version (v1beta1 on v1.37):
	// decode to the internal version, then convert to v1.
	internal, _, err := serializer.NewCodecFactory(scheme).UniversalDecoder().Decode(resp.Kvs[0].Value, nil, nil)
	if err != nil {
		t.Fatalf("decoding stored CRD: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := scheme.Convert(internal, crd, nil); err != nil {
		t.Fatalf("converting stored CRD to v1: %v", err)
	}
	edit(crd)
	crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	data, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Etcd.Put(ctx, key, string(data)); err != nil {
		t.Fatalf("writing %s to etcd: %v", key, err)
	}
}

// removeFirstVersionInEtcd removes the first of crd's two versions from
// spec.versions in etcd, leaving status.storedVersions as it is (the API
// server refuses that update; an edit of etcd, or an old API server, made
// it) — and waits
// until the API server has the CRD without it and answers a list at the
// other version with "invalid group/version" (objects are stored at the
// removed one). It returns the CRD as the API server has it then.
func removeFirstVersionInEtcd(t *testing.T, c clients, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	editStoredCRD(t, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = crd.Spec.Versions[1:]
	})
	waitFor(t, "the API server to see "+crd.Spec.Versions[0].Name+" removed", func() (bool, error) {
		got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), crd.Name, metav1.GetOptions{})
		return err == nil && len(got.Spec.Versions) == 1, err
	})
	waitListFails(t, c, crd, crd.Spec.Versions[1].Name, "invalid group/version")
	return getCRD(t, c, crd.Name)
}
