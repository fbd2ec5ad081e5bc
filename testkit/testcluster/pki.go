package testcluster

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/security"
)

// PKI is a test cluster's CA (berth's own security package, as `berth tls`
// uses it) and the certificates made from it, one per process name:
// masters mi for 127.0.0.i, workers by id, "operator" for the tests
// themselves. Every cluster of a test binary may share one.
type PKI struct {
	Dir string
	mu  sync.Mutex
}

// NewPKI makes a CA and an operator certificate in dir, readable (but for
// the keys) by every user, so masters run as other users reach them.
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.pem")); err != nil {
		if err := security.CreateCA(dir); err != nil {
			return nil, err
		}
	}
	p := &PKI{Dir: dir}
	return p, p.ensure(security.RoleCLI, "operator", nil, 0)
}

// ensure makes name's certificate unless it exists, owned by uid when it
// is not 0 (a master run as another user must read its key).
func (p *PKI) ensure(role security.Role, name string, hosts []string, uid uint32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cert, key := p.files(name)
	if _, err := os.Stat(cert); err != nil {
		if err := security.CreateCert(p.Dir, role, name, hosts); err != nil {
			return fmt.Errorf("certificate %s: %w", name, err)
		}
	}
	if uid != 0 {
		for _, f := range []string{cert, key} {
			if err := os.Chown(f, int(uid), int(uid)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *PKI) files(name string) (cert, key string) {
	return filepath.Join(p.Dir, name+".pem"), filepath.Join(p.Dir, name+"-key.pem")
}

// Flags are the --tls-* flags of the process with certificate name.
func (p *PKI) Flags(name string) []string {
	cert, key := p.files(name)
	return []string{"--tls-ca-file", filepath.Join(p.Dir, "ca.pem"), "--tls-cert-file", cert, "--tls-key-file", key}
}

// MasterFlags makes (once) and names the certificate of master id at ip.
func (p *PKI) MasterFlags(id, ip string, uid uint32) ([]string, error) {
	if err := p.ensure(security.RoleMaster, id, []string{ip, "localhost"}, uid); err != nil {
		return nil, err
	}
	return p.Flags(id), nil
}

// WorkerFlags makes (once) and names the certificate of worker id (also its
// id in the cluster) at ip.
func (p *PKI) WorkerFlags(id, ip string, uid uint32) ([]string, error) {
	if err := p.ensure(security.RoleWorker, id, []string{ip, "localhost"}, uid); err != nil {
		return nil, err
	}
	return p.Flags(id), nil
}

// Operator loads the operator's TLS material.
func (p *PKI) Operator() (*security.TLS, error) {
	cert, key := p.files("operator")
	return security.Load(security.Files{CA: filepath.Join(p.Dir, "ca.pem"), Cert: cert, Key: key})
}

// CAFile is the CA certificate's path.
func (p *PKI) CAFile() string { return filepath.Join(p.Dir, "ca.pem") }

// Transport trusts the cluster's CA and presents no certificate: tests
// prove themselves with the secret (or nothing), as their requests say.
func (p *PKI) Transport() (*http.Transport, error) {
	cfg, err := client.MasterTLS(p.CAFile())
	if err != nil {
		return nil, err
	}
	cfg.VerifyConnection = nil // workers too
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return tr, nil
}

// TLSClient is an httpx.Client (secret as given) that trusts the CA.
func (p *PKI) TLSClient(secret string, timeout time.Duration) *httpx.Client {
	cfg, err := client.MasterTLS(p.CAFile())
	if err != nil {
		panic(fmt.Sprintf("testcluster: the CA made by NewPKI: %v", err))
	}
	return httpx.NewClient(secret, timeout).WithTLS(cfg)
}

// ClientOption makes a client.Client trust the cluster's masters; the
// secret given to client.New proves who it is.
func (p *PKI) ClientOption() client.Option {
	cfg, err := client.MasterTLS(p.CAFile())
	if err != nil {
		panic(fmt.Sprintf("testcluster: the CA made by NewPKI: %v", err))
	}
	return client.WithTLS(cfg)
}
