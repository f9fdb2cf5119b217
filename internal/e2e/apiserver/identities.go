package apiserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
)

// Identity is a user that the API server authenticates by a static bearer
// token (kube-apiserver --token-auth-file), so that a client can run as
// someone other than the system:masters loopback client: API Priority and
// Fairness classifies requests by user and groups, and RBAC authorizes them.
type Identity struct {
	// Key names the identity in benchmarks and tests ("admin", "user",
	// "serviceaccount").
	Key string
	// User is the user name; Groups are its groups besides
	// system:authenticated, which the API server adds to every
	// authenticated user.
	User   string
	UID    string
	Groups []string
	// Token is the bearer token.
	Token string
}

// The identities every server started by Start authenticates. Only Admin
// has permissions of its own (system:masters, which APF exempts); tests
// bind the others to the roles they need.
var (
	// Admin is in system:masters: every request is allowed and exempt from
	// API Priority and Fairness (flow schema exempt, priority level exempt).
	Admin = Identity{Key: "admin", User: "crdversion-admin", UID: "uid-crdversion-admin", Groups: []string{"system:masters"}, Token: "crdversion-token-admin"}
	// User is a plain authenticated user: its requests land in the flow
	// schema global-default and the priority level global-default.
	User = Identity{Key: "user", User: "crdversion-user", UID: "uid-crdversion-user", Token: "crdversion-token-user"}
	// ServiceAccount authenticates as the ServiceAccount migrator of the
	// namespace crdversion would (user name and groups of a ServiceAccount
	// token): its requests land in the flow schema service-accounts and the
	// priority level workload-low.
	ServiceAccount = Identity{
		Key:    "serviceaccount",
		User:   "system:serviceaccount:" + ServiceAccountNamespace + ":" + ServiceAccountName,
		UID:    "uid-crdversion-serviceaccount",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ServiceAccountNamespace, "system:authenticated"},
		Token:  "crdversion-token-serviceaccount",
	}
	// Probe is another plain user (global-default), for a client that
	// stands for the cluster's other clients while one of the above runs.
	Probe = Identity{Key: "probe", User: "crdversion-probe", UID: "uid-crdversion-probe", Token: "crdversion-token-probe"}
	// Identities are the four above, in that order.
	Identities = []Identity{Admin, User, ServiceAccount, Probe}
)

// The ServiceAccount that ServiceAccount stands for. No ServiceAccount
// object is needed: the API server trusts the token file.
const (
	ServiceAccountNamespace = "crdversion"
	ServiceAccountName      = "migrator"
)

// IdentityByKey returns the identity named key, or false.
func IdentityByKey(key string) (Identity, bool) {
	for _, id := range Identities {
		if id.Key == key {
			return id, true
		}
	}
	return Identity{}, false
}

// tokenLines are the lines of a --token-auth-file for Identities
// (token,user,uid,"group1,group2").
func tokenLines() string {
	var b strings.Builder
	for _, id := range Identities {
		fmt.Fprintf(&b, "%s,%s,%s,%q\n", id.Token, id.User, id.UID, strings.Join(id.Groups, ","))
	}
	return b.String()
}

// writeTokenFile writes the token file of Identities (after extra lines) to
// dir and returns the kube-apiserver flag that reads it.
func writeTokenFile(dir, extra string) (string, error) {
	path := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(path, []byte(extra+tokenLines()), 0o600); err != nil {
		return "", err
	}
	return "--token-auth-file=" + path, nil
}

// ConfigAs is s.Config authenticating as id (its bearer token, no client
// certificate).
func (s *Server) ConfigAs(id Identity) *rest.Config {
	cfg := rest.CopyConfig(s.Config)
	cfg.BearerToken, cfg.BearerTokenFile = id.Token, ""
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	cfg.Impersonate = rest.ImpersonationConfig{}
	return cfg
}

// WriteKubeconfigAs writes a kubeconfig for s as id to path (mode 0600).
func (s *Server) WriteKubeconfigAs(path string, id Identity) error {
	return WriteKubeconfig(path, s.ConfigAs(id))
}
