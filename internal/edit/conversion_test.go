package edit

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func TestParseServiceRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want *apiextensionsv1.ServiceReference // nil: an error
	}{
		{"ns/svc", &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "svc"}},
		{"ns/svc:8443", &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "svc", Port: ptr.To[int32](8443)}},
		{"ns/svc/convert", &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr.To("/convert")}},
		{"ns/svc:443/a/b", &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "svc", Port: ptr.To[int32](443), Path: ptr.To("/a/b")}},
		{"ns/svc:1", &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "svc", Port: ptr.To[int32](1)}},
		{"ns/svc:65535", &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "svc", Port: ptr.To[int32](65535)}},
		{"nonamespace", nil},
		{"/svc", nil},
		{"ns/", nil},
		{"ns/:443", nil},
		{"ns/svc:0", nil},
		{"ns/svc:65536", nil},
		{"ns/svc:https", nil},
		{"ns/svc:", nil},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseServiceRef(tc.in)
			if tc.want == nil {
				want := `--webhook-service must be NAMESPACE/NAME[:PORT][/PATH], got "` + tc.in + `"`
				if err == nil || err.Error() != want {
					t.Fatalf("got %+v, %v; want the error %s", got, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Namespace != tc.want.Namespace || got.Name != tc.want.Name ||
				ptr.Deref(got.Port, 0) != ptr.Deref(tc.want.Port, 0) || (got.Port == nil) != (tc.want.Port == nil) ||
				ptr.Deref(got.Path, "") != ptr.Deref(tc.want.Path, "") || (got.Path == nil) != (tc.want.Path == nil) {
				t.Errorf("got %+v (port %v, path %v), want %+v", got, got.Port, got.Path, tc.want)
			}
		})
	}
}

func TestWebhookConversion(t *testing.T) {
	for _, tc := range []struct {
		name, url, service string
		wantErr            string // "" for none
		wantURL            string
		wantService        string // "namespace/name"
	}{
		{name: "url", url: "https://hook.example.com/convert", wantURL: "https://hook.example.com/convert"},
		{name: "service", service: "ns/svc:443/convert", wantService: "ns/svc"},
		{name: "neither", wantURL: ""},
		{name: "both", url: "https://x", service: "ns/svc", wantErr: "--webhook-url and --webhook-service cannot be combined"},
		{name: "http url", url: "http://hook.example.com", wantErr: `--webhook-url must be an https:// URL, got "http://hook.example.com"`},
		{name: "bad service", service: "svc", wantErr: "--webhook-service must be NAMESPACE/NAME[:PORT][/PATH]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv, err := WebhookConversion(tc.url, tc.service, []string{"v1", "v1beta1"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
				t.Fatalf("got %+v, want a Webhook conversion with a client config", conv)
			}
			cc := conv.Webhook.ClientConfig
			if got := ptr.Deref(cc.URL, ""); got != tc.wantURL {
				t.Errorf("url %q, want %q", got, tc.wantURL)
			}
			gotService := ""
			if cc.Service != nil {
				gotService = cc.Service.Namespace + "/" + cc.Service.Name
			}
			if gotService != tc.wantService {
				t.Errorf("service %q, want %q", gotService, tc.wantService)
			}
			if cc.CABundle != nil {
				t.Errorf("caBundle %q, want it left to the caller", cc.CABundle)
			}
			if got := strings.Join(conv.Webhook.ConversionReviewVersions, ","); got != "v1,v1beta1" {
				t.Errorf("review versions %s, want v1,v1beta1", got)
			}
		})
	}
}
