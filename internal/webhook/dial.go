package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// NotReachableError is returned by VerifyServingCert when no TCP connection
// to the endpoint could be made from this client within the timeout (for
// example a pod IP outside the client's network): the certificate was not
// verified.
type NotReachableError struct {
	Address string
	Err     error
}

func (e *NotReachableError) Error() string {
	return fmt.Sprintf("the endpoint %s is not reachable from this client (%v)", e.Address, e.Err)
}

func (e *NotReachableError) Unwrap() error { return e.Err }

// VerificationError is returned by VerifyServingCert when the endpoint's
// certificate does not verify for ServerName against the caBundle: the API
// server's calls to the webhook fail the same way.
type VerificationError struct {
	Address, ServerName string
	// Issuer is the issuer of the certificate the endpoint presented.
	Issuer string
	Err    error
}

func (e *VerificationError) Error() string {
	return fmt.Sprintf("the caBundle does not verify the serving certificate of %s at %s (issued by %q): %v", e.ServerName, e.Address, e.Issuer, e.Err)
}

func (e *VerificationError) Unwrap() error { return e.Err }

// VerifyServingCert connects to address ("host:port") and runs a TLS
// handshake with serverName and roots, as the API server does when it calls
// a webhook. It returns nil when the certificate verifies, a
// *NotReachableError when no connection could be made, a
// *VerificationError when the certificate does not verify, and another
// error when the handshake fails otherwise (the endpoint does not speak
// TLS, for example). timeout bounds the connection and the handshake.
func VerifyServingCert(ctx context.Context, address, serverName string, roots *x509.CertPool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return &NotReachableError{Address: address, Err: err}
	}
	defer conn.Close()
	tc := tls.Client(conn, &tls.Config{ServerName: serverName, RootCAs: roots, MinVersion: tls.VersionTLS12})
	err = tc.HandshakeContext(ctx)
	if err == nil {
		return tc.Close()
	}
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) {
		ve := &VerificationError{Address: address, ServerName: serverName, Err: cve.Err}
		if len(cve.UnverifiedCertificates) > 0 {
			ve.Issuer = cve.UnverifiedCertificates[0].Issuer.String()
		}
		return ve
	}
	return fmt.Errorf("the TLS handshake with %s failed: %w", address, err)
}
