package notify

import (
	"context"
	"fmt"

	"github.com/wneessen/go-mail"

	"github.com/poolflow/poolflow/config"
)

// email sends the event as a plain-text mail over SMTP (github.com/wneessen/go-mail):
// STARTTLS as the notifier asks (required by default), or TLS from the start, and SMTP
// authentication (the best mechanism the server offers) when a username is set.
type email struct {
	cfg  config.Notifier
	opts Options
}

func newEmail(cfg config.Notifier, opts Options) *email { return &email{cfg: cfg, opts: opts} }

func (e *email) Send(ctx context.Context, ev Event) error {
	s := e.cfg.SMTP
	copts := []mail.Option{mail.WithPort(s.Port), mail.WithTimeout(e.cfg.Timeout)}
	switch {
	case s.TLS:
		copts = append(copts, mail.WithSSL())
	case s.StartTLS == config.StartTLSNone:
		copts = append(copts, mail.WithTLSPolicy(mail.NoTLS))
	case s.StartTLS == config.StartTLSOpportunistic:
		copts = append(copts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	default:
		copts = append(copts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if e.opts.TLS != nil {
		copts = append(copts, mail.WithTLSConfig(e.opts.TLS))
	}
	if s.Username != "" {
		copts = append(copts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(s.Username),
			mail.WithPassword(s.Password.Reveal()))
	}
	client, err := mail.NewClient(s.Host, copts...)
	if err != nil {
		return fmt.Errorf("smtp client: %w", err)
	}
	subject, body := Message(ev)
	m := mail.NewMsg()
	if err := m.From(e.cfg.From); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if err := m.To(e.cfg.To...); err != nil {
		return fmt.Errorf("to: %w", err)
	}
	m.Subject("[poolflow] " + subject)
	m.SetDate()
	m.SetMessageID()
	m.SetGenHeader("X-Poolflow-Event", string(ev.Event))
	m.SetGenHeader(mail.HeaderXMailer, "poolflow")
	m.SetGenHeader("Idempotency-Key", ev.IdempotencyKey)
	m.SetBodyString(mail.TypeTextPlain, subject+"\n\n"+body)
	if err := client.DialAndSendWithContext(ctx, m); err != nil {
		return fmt.Errorf("smtp %s:%d: %w", s.Host, s.Port, err)
	}
	return nil
}
