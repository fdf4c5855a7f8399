package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// The lifetimes of the gateway's certificates. The authority lives as long
// as the gateway's process (its key is made at start and never leaves
// memory), so its validity only has to outlast the process; a host's
// certificate is short-lived and made again before it expires.
const (
	authorityValidity = 10 * 365 * 24 * time.Hour
	leafValidity      = 24 * time.Hour
	leafRenewBefore   = time.Hour
)

// authority is the gateway's own certificate authority, made at start: an
// ECDSA P-256 key in memory only, and a certificate the sealed CLIs are
// given to trust (Gateway.CACert). It signs a certificate per intercepted
// host, kept until it nears its end.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	now  func() time.Time

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

func newAuthority(now func() time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("gateway: certificate authority key: %w", err)
	}
	start := now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "Alfred model gateway " + start.UTC().Format(time.RFC3339)},
		NotBefore: start.Add(-5 * time.Minute), NotAfter: start.Add(authorityValidity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("gateway: certificate authority: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("gateway: certificate authority: %w", err)
	}
	return &authority{cert: cert, key: key, now: now, leaves: map[string]*tls.Certificate{},
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// serial is a random 128-bit serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128)) // never fails (crypto/rand panics instead)
	return n
}

// leaf is the certificate for host, made when there is none or the one
// kept nears its end.
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if c := a.leaves[host]; c != nil && c.Leaf.NotAfter.Sub(now) > leafRenewBefore {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("gateway: certificate for %s: %w", host, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: host},
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(leafValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("gateway: certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("gateway: certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	a.leaves[host] = c
	return c, nil
}

// CACert is the PEM certificate of the gateway's certificate authority,
// which a CLI reaching an intercepted provider must trust (Session.CAPath
// holds it as a file); nil when no provider is intercepted. Its key never
// leaves the gateway's memory.
func (g *Gateway) CACert() []byte {
	if g.ca == nil {
		return nil
	}
	return append([]byte(nil), g.ca.pem...)
}
