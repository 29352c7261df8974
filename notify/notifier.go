package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"

	"github.com/poolflow/poolflow/config"
)

// Notifier sends an event somewhere. Send returns when the receiver took it (nil) or the try
// failed; ctx bounds it (the notifier's timeout). An error never holds a secret: not a Slack
// URL, not a password.
type Notifier interface {
	Send(ctx context.Context, ev Event) error
}

// Options are what tests change about how notifiers reach their receivers.
type Options struct {
	// TLS, when set, is the TLS configuration of e-mail connections (a test server's CA).
	TLS *tls.Config
}

// New makes the notifier cfg describes.
func New(cfg config.Notifier, opts Options) (Notifier, error) {
	switch cfg.Type {
	case config.NotifierWebhook:
		return newWebhook(cfg), nil
	case config.NotifierSlack:
		return newSlack(cfg), nil
	case config.NotifierCommand:
		return &command{argv: cfg.Command}, nil
	case config.NotifierEmail:
		return newEmail(cfg, opts), nil
	}
	return nil, fmt.Errorf("notifier %s: unknown type %q", cfg.Name, cfg.Type)
}

// ErrPermanent marks a failed try that trying again cannot mend (a notifier no longer
// configured): the notification fails at once.
var ErrPermanent = errors.New("will not succeed on a retry")

// redactURL drops the URL from a net/http error: a Slack URL is a credential, and a webhook's
// may carry a token in its query.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
