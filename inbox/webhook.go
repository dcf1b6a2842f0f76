package inbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
)

// The inbox's webhooks (Config.Webhook): every ask a run puts to the
// inbox is also posted, signed, to the webhook URLs, with a one-time
// answer URL (approval.Webhook: the same payload, signature, replay window
// and refusals as a run's --approve-webhook). A webhook's answer goes to
// the run exactly as an answer on the page does (Server.Answer), so the
// first answer wins between the page and the webhook, and the run checks
// its grants: the inbox's own user's, as for every inbox answer (a run
// cannot tell one inbox answer from another). An ask the webhook could not
// be delivered to stays on the page until its deadline; a webhook never
// turns an ask into an allow by failing.

// startWebhook checks cfg (its identity must be the inbox's own user,
// whose grants the runs give every inbox answer) and starts serving its
// answer URLs.
func (s *Server) startWebhook(cfg approval.WebhookConfig) error {
	if cfg.Identity == "" {
		cfg.Identity = fmt.Sprintf("uid:%d", os.Getuid())
	}
	cfg.Audit = s.webhookAudit
	w, err := approval.NewWebhook(cfg)
	if err != nil {
		return err
	}
	if w.UID() != os.Getuid() {
		w.Close()
		return fmt.Errorf("webhook identity %q is uid %d, not the inbox's user (uid %d): runs give every inbox answer the inbox user's grants, so the webhook answers as that user (leave the identity out, or name that user)", cfg.Identity, w.UID(), os.Getuid())
	}
	s.webhook, s.webhookID = w, cfg.Identity
	return nil
}

// postAsk puts a (just received) to the webhooks, until an answer, the
// ask's end (settleLocked cancels ctx) or every delivery failing. Called
// without s.mu.
func (s *Server) postAsk(ctx context.Context, a *ask) {
	req := approval.Request{ID: a.ID, Agent: a.req.Agent, Role: a.req.Role, Run: a.run.info.Run, Pid: a.req.Pid,
		Program: a.req.Program, Argv: a.req.Argv, Cwd: a.req.Cwd, Action: a.req.Action, Rule: a.req.Rule,
		Layer: a.req.Layer, Reason: a.req.Reason, Identified: a.req.Identified}
	resp, err := s.webhook.Approve(ctx, req)
	switch {
	case err != nil && ctx.Err() != nil:
		return // the ask ended (answered on the page, cancelled, its deadline)
	case errors.Is(err, approval.ErrUnavailable):
		// Every delivery failed (each audited): the ask stays on the page.
		s.log.Warn("inbox: webhook delivery failed; the ask stays on the page", "ask", a.ID, "err", err)
		return
	case err != nil:
		s.log.Warn("inbox: webhook", "ask", a.ID, "err", err)
		return
	}
	status, msg := s.Answer(a.ID, resp.Answer.String(), "", resp.Approver)
	if status != http.StatusOK {
		// Accepted at the answer URL, not applied: the page's answer came
		// first, or the run refused it.
		s.auditEvent(audit.Event{Agent: a.req.Agent, Role: a.req.Role, Run: a.run.info.Run, Event: audit.EventAsk,
			Pid: a.req.Pid, Action: a.req.Action, Rule: a.req.Rule, Decision: audit.DecisionAnswerRefused, Approver: resp.Approver,
			Reason: fmt.Sprintf("the webhook's answer %s was not applied: %s", resp.Answer, msg),
			Detail: map[string]string{"webhook": "webhook_answer_not_applied", "request": a.ID}})
	}
}

// webhookAudit writes what the webhook reports to the inbox's audit log:
// deliveries and failed deliveries, refused answers (answer_refused).
func (s *Server) webhookAudit(e approval.WebhookEvent) {
	ev := audit.Event{Event: audit.EventAsk, Action: e.Action, Reason: e.Reason, Approver: "webhook:" + s.webhookID,
		Detail: map[string]string{"webhook": e.Kind}}
	if e.Kind == approval.WebhookRefused {
		ev.Decision = audit.DecisionAnswerRefused
	}
	if e.URL != "" {
		ev.Detail["webhook_url"] = e.URL
	}
	if e.Request != "" {
		ev.Detail["request"] = e.Request
		s.mu.Lock()
		if a := s.asks[e.Request]; a != nil {
			ev.Agent, ev.Role, ev.Run, ev.Pid, ev.Rule = a.req.Agent, a.req.Role, a.run.info.Run, a.req.Pid, a.req.Rule
		} else if e.Ask.ID == e.Request {
			// Answered and gone before the delivery was reported:
			// the ask as postAsk put it (the same fields).
			ev.Agent, ev.Role, ev.Run, ev.Pid, ev.Rule = e.Ask.Agent, e.Ask.Role, e.Ask.Run, e.Ask.Pid, e.Ask.Rule
		}
		s.mu.Unlock()
	}
	s.auditEvent(ev)
}
