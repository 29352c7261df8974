package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNotifiersParse(t *testing.T) {
	t.Setenv("PF_TEST_HOOK_SECRET", "s3cr3t-hook")
	t.Setenv("PF_TEST_SLACK_URL", "https://hooks.slack.com/services/T000/B000/XXXX")
	t.Setenv("PF_TEST_SMTP_PW", "smtp-pass")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hook.secret"), []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := `notifiers:
  ops:
    type: webhook
    url: https://hooks.example.com/poolflow
    secret_env: PF_TEST_HOOK_SECRET
    headers: {X-Team: data}
    timeout: 3s
  filed:
    type: webhook
    url: http://127.0.0.1:9000/
    secret_file: hook.secret
  chat: {type: slack, url_env: PF_TEST_SLACK_URL}
  mail:
    type: email
    smtp: {host: smtp.example.com, port: 587, username: poolflow, password_env: PF_TEST_SMTP_PW, starttls: true}
    from: poolflow@example.com
    to: [oncall@example.com, "Data Team <data@example.com>"]
  page: {type: command, command: [/usr/local/bin/page, --team, ops]}
notifications: {concurrency: 2, max_tries: 3, retry_delay: 1s, max_retry_delay: 10s}
server: {base_url: "https://poolflow.example.com/"}
`
	path := filepath.Join(dir, "poolflow.yaml")
	c, err := Parse(path, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.NotifierNames(), ","); got != "chat,filed,mail,ops,page" {
		t.Fatalf("names %s", got)
	}
	ops, _ := c.Notifier("ops")
	if ops.Type != NotifierWebhook || ops.URL.Reveal() != "https://hooks.example.com/poolflow" ||
		ops.Secret.Reveal() != "s3cr3t-hook" || ops.Headers["X-Team"] != "data" || ops.Timeout != 3*time.Second ||
		ops.Line != 2 || ops.Column != 3 {
		t.Fatalf("ops = %+v", ops)
	}
	if f, _ := c.Notifier("filed"); f.Secret.Reveal() != "from-file" || f.Timeout != DefaultNotifierTimeout {
		t.Fatalf("a secret from a file next to poolflow.yaml: %q", f.Secret.Reveal())
	}
	if chat, _ := c.Notifier("chat"); chat.URL.Reveal() != "https://hooks.slack.com/services/T000/B000/XXXX" {
		t.Fatal("slack url not read from the environment")
	}
	mail, _ := c.Notifier("mail")
	if mail.SMTP.Password.Reveal() != "smtp-pass" || mail.SMTP.StartTLS != StartTLSRequired || len(mail.To) != 2 {
		t.Fatalf("mail = %+v", mail)
	}
	if page, _ := c.Notifier("page"); len(page.Command) != 3 {
		t.Fatalf("page = %+v", page)
	}
	if d := c.Delivery; d.Concurrency != 2 || d.MaxTries != 3 || d.RetryDelay != time.Second || d.MaxRetryDelay != 10*time.Second {
		t.Fatalf("delivery = %+v", d)
	}
	if c.BaseURL != "https://poolflow.example.com" {
		t.Fatalf("base url %q", c.BaseURL)
	}
	// No secret is ever printed or marshalled.
	js, _ := json.Marshal(c)
	for _, shown := range []string{fmt.Sprintf("%v %+v %#v %s %q", c, c.Notifiers, c.Notifiers, ops.Secret, ops.Secret), string(js)} {
		for _, secret := range []string{"s3cr3t-hook", "from-file", "smtp-pass", "XXXX"} {
			if strings.Contains(shown, secret) {
				t.Fatalf("secret %q shown in %s", secret, shown)
			}
		}
	}
}

// TestNotifierErrors: each problem is a config error naming the notifier, at its place.
func TestNotifierErrors(t *testing.T) {
	t.Setenv("PF_TEST_SET", "x")
	tests := []struct{ name, src, want string }{
		{"missing secret env", "notifiers:\n  ops: {type: webhook, url: http://h/, secret_env: PF_TEST_UNSET_VAR}\n",
			"p.yaml:2:52: notifiers.ops.secret_env: notifier ops: environment variable PF_TEST_UNSET_VAR is not set"},
		{"bad url", "notifiers:\n  ops: {type: webhook, url: \"ftp://h/x\"}\n",
			"p.yaml:2:29: notifiers.ops.url: invalid URL \"ftp://h/x\": want an http:// or https:// address"},
		{"no host", "notifiers:\n  ops: {type: webhook, url: \"http:///x\"}\n", "notifiers.ops.url: invalid URL"},
		{"slack url is not shown", "notifiers:\n  chat: {type: slack, url_env: PF_TEST_SET}\n",
			"notifiers.chat.url: invalid URL: want an http:// or https:// address"},
		{"missing url", "notifiers:\n  ops: {type: webhook}\n", "p.yaml:2:3: notifiers.ops: missing url"},
		{"literal secret", "notifiers:\n  ops: {type: webhook, url: http://h/, secret: abc}\n",
			"notifiers.ops.secret: a secret is not written in poolflow.yaml; put it in the environment (secret_env) or a file (secret_file)"},
		{"unknown type", "notifiers:\n  ops: {type: pager}\n", "p.yaml:2:15: notifiers.ops.type: invalid value \"pager\""},
		{"wrong field for type", "notifiers:\n  page: {type: command, command: [x], url: http://h/}\n",
			"notifiers.page.url: not a field of a command notifier"},
		{"command with no argv", "notifiers:\n  page: {type: command, command: \"page ops\"}\n", "notifiers.page.command: invalid value"},
		{"missing file", "notifiers:\n  ops: {type: webhook, url: http://h/, secret_file: /nonexistent/x}\n",
			"notifiers.ops.secret_file: notifier ops: read secret file"},
		{"email without smtp host", "notifiers:\n  mail: {type: email, smtp: {port: 25}, from: a@b.c, to: [d@e.f]}\n",
			"notifiers.mail.smtp.host: missing"},
		{"email bad address", "notifiers:\n  mail: {type: email, smtp: {host: h}, from: nobody, to: [d@e.f]}\n",
			"notifiers.mail.from: invalid address \"nobody\""},
		{"email password in clear", "notifiers:\n  mail: {type: email, smtp: {host: h, username: u, password: p}, from: a@b.c, to: d@e.f}\n",
			"notifiers.mail.smtp.password: a password is not written in poolflow.yaml"},
		{"bad name", "notifiers:\n  \"o ps\": {type: command, command: [x]}\n", "invalid notifier name \"o ps\""},
		{"delivery", "notifications: {max_tries: 0}\n", "notifications.max_tries: invalid value 0 (want 1 or more)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}
