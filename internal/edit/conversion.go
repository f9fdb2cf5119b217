package edit

import (
	"fmt"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// WebhookConversion builds the Webhook conversion of add-version's flags:
// the webhook is reached at url (https:// only) or at the Service service
// (NAMESPACE/NAME[:PORT][/PATH], see ParseServiceRef), at most one of them,
// and accepts the ConversionReview versions reviewVersions, in order of
// preference. The caBundle is left empty for the caller to fill. The
// errors name the flags (--webhook-url, --webhook-service).
func WebhookConversion(url, service string, reviewVersions []string) (*apiextensionsv1.CustomResourceConversion, error) {
	cc := &apiextensionsv1.WebhookClientConfig{}
	switch {
	case url != "" && service != "":
		return nil, fmt.Errorf("--webhook-url and --webhook-service cannot be combined")
	case url != "":
		if !strings.HasPrefix(url, "https://") {
			return nil, fmt.Errorf("--webhook-url must be an https:// URL, got %q", url)
		}
		cc.URL = &url
	case service != "":
		svc, err := ParseServiceRef(service)
		if err != nil {
			return nil, err
		}
		cc.Service = svc
	}
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: cc, ConversionReviewVersions: reviewVersions},
	}, nil
}

// ParseServiceRef parses NAMESPACE/NAME[:PORT][/PATH] into a webhook's
// Service reference: PORT, when given, is 1 to 65535 (unset: the API
// server's default 443); PATH, when given, keeps its leading "/". Anything
// else is an error naming --webhook-service.
func ParseServiceRef(s string) (*apiextensionsv1.ServiceReference, error) {
	bad := fmt.Errorf("--webhook-service must be NAMESPACE/NAME[:PORT][/PATH], got %q", s)
	ns, rest, ok := strings.Cut(s, "/")
	if !ok || ns == "" || rest == "" {
		return nil, bad
	}
	ref := &apiextensionsv1.ServiceReference{Namespace: ns}
	nameport, path, hasPath := strings.Cut(rest, "/")
	if hasPath {
		p := "/" + path
		ref.Path = &p
	}
	name, port, hasPort := strings.Cut(nameport, ":")
	if name == "" {
		return nil, bad
	}
	ref.Name = name
	if hasPort {
		n, err := strconv.ParseInt(port, 10, 32)
		if err != nil || n < 1 || n > 65535 {
			return nil, bad
		}
		p := int32(n)
		ref.Port = &p
	}
	return ref, nil
}
