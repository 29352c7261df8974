package notify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/notify"
)

// mailServer is a real SMTP server in the test process (github.com/emersion/go-smtp): STARTTLS
// with a certificate made for the test, PLAIN auth only after TLS, and the messages it takes
// on a channel.
type mailServer struct {
	addr      string
	port      string
	clientTLS *tls.Config // trusts the server's certificate
	got       chan mail
	user, pw  string
}

type mail struct {
	from string
	to   []string
	data string
}

func newMailServer(t *testing.T, user, pw string) *mailServer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ms := &mailServer{got: make(chan mail, 10), user: user, pw: pw,
		clientTLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &mailSession{ms: ms}, nil }))
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.Domain = "127.0.0.1"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	ms.addr = ln.Addr().String()
	_, ms.port, _ = net.SplitHostPort(ms.addr)
	return ms
}

type mailSession struct {
	ms   *mailServer
	m    mail
	auth bool
}

func (s *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pw string) error {
		if user != s.ms.user || pw != s.ms.pw {
			return errors.New("invalid credentials")
		}
		s.auth = true
		return nil
	}), nil
}

func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.auth {
		return smtp.ErrAuthRequired
	}
	s.m.from = from
	return nil
}

func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.m.to = append(s.m.to, to)
	return nil
}

func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.m.data = string(b)
	s.ms.got <- s.m
	return err
}

func (s *mailSession) Reset()        { s.m = mail{} }
func (s *mailSession) Logout() error { return nil }

func emailConfig(t *testing.T, ms *mailServer, pwEnv string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("p.yaml", []byte(`notifiers:
  mail:
    type: email
    smtp: {host: 127.0.0.1, port: `+ms.port+`, username: poolflow, password_env: `+pwEnv+`, starttls: true}
    from: poolflow@example.com
    to: [oncall@example.com]
    timeout: 5s
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestEmailOverSTARTTLS: the mail reaches a real SMTP server over STARTTLS with auth, with the
// subject and the facts of the event.
func TestEmailOverSTARTTLS(t *testing.T) {
	ms := newMailServer(t, "poolflow", "right-password")
	t.Setenv("PF_SMTP_PW", "right-password")
	cfg := emailConfig(t, ms, "PF_SMTP_PW")
	nc, _ := cfg.Notifier("mail")
	n, err := notify.New(*nc, notify.Options{TLS: ms.clientTLS})
	if err != nil {
		t.Fatal(err)
	}
	ev := sample
	ev.URL = "http://ui/ui/dags/etl/runs/r1/tasks/load"
	if err := n.Send(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	m := <-ms.got
	if m.from != "poolflow@example.com" || len(m.to) != 1 || m.to[0] != "oncall@example.com" {
		t.Fatalf("envelope %+v", m)
	}
	for _, want := range []string{"Subject: [poolflow] etl.load failed (try 2)", "reason: exit status 1", "run: r1",
		"link: http://ui/ui/dags/etl/runs/r1/tasks/load", "X-Poolflow-Event: task_failed"} {
		if !strings.Contains(m.data, want) {
			t.Errorf("mail lacks %q:\n%s", want, m.data)
		}
	}
}

// TestEmailRefusedAuth: a server refusing the credentials is a failed try with the server's
// words, not a crash, and the password is not in the error.
func TestEmailRefusedAuth(t *testing.T) {
	ms := newMailServer(t, "poolflow", "right-password")
	t.Setenv("PF_SMTP_PW_BAD", "wrong-password")
	cfg := emailConfig(t, ms, "PF_SMTP_PW_BAD")
	nc, _ := cfg.Notifier("mail")
	n, _ := notify.New(*nc, notify.Options{TLS: ms.clientTLS})
	err := n.Send(context.Background(), sample)
	if err == nil || !strings.Contains(err.Error(), "AUTH failed") || !strings.Contains(err.Error(), "invalid credentials") {
		t.Fatalf("err = %v, want an authentication failure", err)
	}
	if strings.Contains(err.Error(), "wrong-password") {
		t.Fatalf("the password is in the error: %v", err)
	}
	select {
	case m := <-ms.got:
		t.Fatalf("a mail was taken: %+v", m)
	default:
	}
}
