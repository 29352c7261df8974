package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/poolflow/poolflow/config"
)

// The webhook's headers.
const (
	HeaderSignature   = "X-Poolflow-Signature" // sha256=<hex HMAC-SHA256 of the body>
	HeaderIdempotency = "Idempotency-Key"
	HeaderEvent       = "X-Poolflow-Event"
)

// MaxAnswer is how much of a receiver's answer is read; the rest is cut.
const MaxAnswer = 10 << 20

// keptAnswer is how much of a refusal's answer last_error keeps.
const keptAnswer = 200

// Sign is the X-Poolflow-Signature of body with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is body's signature with secret (a receiver's check, in constant
// time).
func Verify(secret, body []byte, sig string) bool {
	return hmac.Equal([]byte(sig), []byte(Sign(secret, body)))
}

type webhook struct {
	url     string
	secret  []byte
	headers map[string]string
	client  *http.Client
}

func newWebhook(cfg config.Notifier) *webhook {
	return &webhook{url: cfg.URL.Reveal(), secret: []byte(cfg.Secret.Reveal()), headers: cfg.Headers, client: httpClient()}
}

// httpClient follows no redirect (a POST is not to be replayed elsewhere: a 3xx is a failed
// try) and honours HTTPS_PROXY as outbound HTTP usually does.
func httpClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 4},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

func (w *webhook) Send(ctx context.Context, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	h := http.Header{}
	for k, v := range w.headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderIdempotency, ev.IdempotencyKey)
	h.Set(HeaderEvent, string(ev.Event))
	if len(w.secret) > 0 {
		h.Set(HeaderSignature, Sign(w.secret, body))
	}
	return post(ctx, w.client, w.url, h, body)
}

// post sends body and reads at most MaxAnswer of the answer; a 2xx is a delivery.
func post(ctx context.Context, client *http.Client, url string, h http.Header, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return redactURL(err)
	}
	req.Header = h
	req.Header.Set("User-Agent", "poolflow")
	resp, err := client.Do(req)
	if err != nil {
		return redactURL(err)
	}
	defer resp.Body.Close()
	var kept bytes.Buffer
	_, rerr := io.Copy(io.MultiWriter(&limited{&kept, keptAnswer}), io.LimitReader(resp.Body, MaxAnswer))
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(kept.String())
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
		if msg != "" {
			return fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
		}
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if rerr != nil && ctx.Err() != nil {
		return fmt.Errorf("reading the answer: %w", ctx.Err())
	}
	return nil // a 2xx whose body broke off is still taken
}

// limited keeps the first n bytes written and drops the rest.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
