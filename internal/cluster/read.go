package cluster

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FirstObject returns one object of crd read at version (a list with limit
// 1 in all namespaces), or nil when there is none. Errors are the API
// server's: apierrors.IsForbidden when the user may not list them.
func (c *Client) FirstObject(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) (*unstructured.Unstructured, error) {
	list, err := c.Dynamic.Resource(GVR(crd, version)).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(list.Items) == 0 {
		return nil, err
	}
	return &list.Items[0], nil
}
