package cluster

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
)

// WaitServed polls every 50 ms, for up to timeout, until the CRD has the
// condition Established and each of its served versions lists the resource
// in discovery — the point from which clients can use those versions. On
// timeout the error says what was still missing.
func WaitServed(ctx context.Context, crds apiextensionsclient.CustomResourceDefinitionInterface, disc discovery.DiscoveryInterface, name string, timeout time.Duration) error {
	var waitingFor string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		waitingFor = fmt.Sprintf("conditions %v", crd.Status.Conditions)
		established := false
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		if !established {
			return false, nil
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			list, err := disc.ServerResourcesForGroupVersion(gv)
			if err != nil {
				waitingFor = fmt.Sprintf("discovery of %s: %v", gv, err)
				return false, nil
			}
			found := false
			for _, r := range list.APIResources {
				found = found || r.Name == crd.Spec.Names.Plural
			}
			if !found {
				waitingFor = fmt.Sprintf("%s in discovery of %s", crd.Spec.Names.Plural, gv)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CustomResourceDefinition %s to be served (%s): %w", name, waitingFor, err)
	}
	return nil
}

// WaitServed waits until the CRD's served versions are in discovery; see
// the package function.
func (c *Client) WaitServed(ctx context.Context, name string, timeout time.Duration) error {
	disc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return err
	}
	return WaitServed(ctx, c.CRDs, disc, name, timeout)
}

// ServedVersions returns the versions of the API group that the cluster
// serves, from discovery (/apis), preferred first; none when it does not
// serve the group.
func (c *Client) ServedVersions(group string) ([]string, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return nil, err
	}
	groups, err := disc.ServerGroups()
	if err != nil {
		return nil, err
	}
	for _, g := range groups.Groups {
		if g.Name != group {
			continue
		}
		var out []string
		if g.PreferredVersion.Version != "" {
			out = append(out, g.PreferredVersion.Version)
		}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				out = append(out, v.Version)
			}
		}
		return out, nil
	}
	return nil, nil
}
