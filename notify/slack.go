package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/vocab"
)

// slack posts to a Slack incoming webhook (https://api.slack.com/messaging/webhooks): a
// message whose text says the event in words, with its link.
type slack struct {
	url    string
	client *http.Client
}

func newSlack(cfg config.Notifier) *slack { return &slack{url: cfg.URL.Reveal(), client: httpClient()} }

// SlackMessage is the body posted to Slack.
type SlackMessage struct {
	Text string `json:"text"`
}

// SlackText is the message's text (Slack's mrkdwn): an icon, the subject in bold, the facts.
func SlackText(ev Event) string {
	subject, body := Message(ev)
	icon := map[vocab.NotifyEvent]string{vocab.EventRunFailed: ":red_circle:", vocab.EventTaskFailed: ":red_circle:",
		vocab.EventTaskRetry: ":warning:", vocab.EventQueueWait: ":hourglass:", vocab.EventDeadlineMiss: ":alarm_clock:",
		vocab.EventRunSucceeded: ":white_check_mark:", vocab.EventTaskSucceeded: ":white_check_mark:",
		vocab.EventTest: ":wave:"}[ev.Event]
	var b strings.Builder
	b.WriteString(strings.TrimSpace(icon + " *" + escapeSlack(subject) + "*"))
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		if k == "link" {
			continue
		}
		b.WriteString("\n" + k + ": " + escapeSlack(v))
	}
	if ev.URL != "" {
		b.WriteString("\n<" + ev.URL + "|open in poolflow>")
	}
	return b.String()
}

// escapeSlack escapes what Slack's mrkdwn reads as markup.
func escapeSlack(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func (s *slack) Send(ctx context.Context, ev Event) error {
	body, err := json.Marshal(SlackMessage{Text: SlackText(ev)})
	if err != nil {
		return err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return post(ctx, s.client, s.url, h, body)
}
