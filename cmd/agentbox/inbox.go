package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/approval"
	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/inbox"
)

func inboxCommand() *cli.Command {
	return &cli.Command{
		Name:  "inbox",
		Usage: "serve the approval inbox: every run started with --approve inbox asks here, on one web page",
		Description: "Runs attach to the inbox's socket (agentbox run --approve inbox). The page lists their pending asks live,\n" +
			"answers them, lists and revokes the rules answers made, and shows the history from the audit logs.\n" +
			"It listens on loopback; beyond loopback it needs TLS. See docs/inbox.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "socket", Usage: "unix socket `PATH` runs attach to (default " + approval.DefaultInboxSocket() + "; env AGENTBOX_INBOX)"},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:0", Usage: "the page's `ADDR` (host:port; port 0 picks a free one)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "TLS certificate `FILE` (needed beyond loopback, with --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "TLS key `FILE`"},
			&cli.BoolFlag{Name: "tls-self-signed", Usage: "serve TLS with a certificate made now (its fingerprint is printed)"},
			&cli.StringSliceFlag{Name: "host", Usage: "a further host `NAME` the page is reached by (Host header check)"},
			&cli.StringSliceFlag{Name: "user", Usage: "login `NAME` (repeat for several reviewers; default the current user)"},
			&cli.BoolFlag{Name: "new-tokens", Usage: "replace the users' API tokens (the old ones stop working)"},
			&cli.StringFlag{Name: "state-dir", Usage: "`DIR` for the tokens file (default $XDG_STATE_HOME/agentbox/inbox)"},
			&cli.StringFlag{Name: "audit", Value: audit.DefaultPath(), Usage: "audit log `FILE` for what the inbox sees happen (asks whose run went away, project rules revoked)"},
			&cli.StringFlag{Name: "audit-key", Usage: "HMAC key `FILE` of that log (default <log>.key)"},
			&cli.StringSliceFlag{Name: "webhook", Usage: "also post each ask, signed, to the webhook `URL` (a chat bot, an on-call tool), which answers through a one-time answer URL; repeatable; needs --webhook-secret (docs/operations.md)"},
			&cli.StringFlag{Name: "webhook-secret", Usage: "the webhooks' shared HMAC secret is in `FILE` (mode 600, at least 16 bytes)"},
			&cli.StringFlag{Name: "webhook-identity", Usage: "the `USER` a webhook's answers count as: only the inbox's own user (the default), whose grants runs give every inbox answer"},
			&cli.StringFlag{Name: "webhook-listen", Usage: "serve the webhooks' answer URLs on `ADDR` (default 127.0.0.1:0, a free loopback port)"},
			&cli.StringFlag{Name: "webhook-answer-url", Usage: "answer URLs start with `BASE` instead of http://ADDR (a reverse proxy in front of --webhook-listen)"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() > 0 {
				return exitf(exitUsage, "inbox: takes no arguments (got %q)", c.Args().First())
			}
			hook, err := inboxWebhook(c)
			if err != nil {
				return err
			}
			srv, err := inbox.New(inbox.Config{
				Socket: c.String("socket"), Listen: c.String("listen"),
				TLSCert: c.String("tls-cert"), TLSKey: c.String("tls-key"), SelfSigned: c.Bool("tls-self-signed"),
				Hosts: c.StringSlice("host"), Users: c.StringSlice("user"), NewTokens: c.Bool("new-tokens"),
				StateDir: c.String("state-dir"), AuditPath: c.String("audit"), AuditKey: c.String("audit-key"),
				Webhook: hook,
			})
			if err != nil {
				return exitf(exitBadInput, "inbox: %v", err)
			}
			w := c.Root().Writer
			attach := "--approve inbox"
			if c.String("socket") != "" {
				attach = "--approve inbox:" + srv.Socket()
			}
			fmt.Fprintf(w, "agentbox inbox: %s  (runs attach with agentbox run %s)\n", srv.URL(), attach)
			if hook != nil {
				fmt.Fprintf(w, "agentbox inbox: each ask is also posted to %d webhook URL(s); answers count as this inbox's user\n", len(hook.URLs))
			}
			if srv.Fingerprint != "" {
				fmt.Fprintf(w, "agentbox inbox: TLS certificate SHA-256 fingerprint %s\n", srv.Fingerprint)
			}
			for _, u := range srv.Users() {
				login, err := srv.LoginURL(u)
				if err != nil {
					return exitf(exitFailure, "inbox: %v", err)
				}
				fmt.Fprintf(w, "agentbox inbox: log in as %s: %s  (one-time; API token in %s)\n", u, login, srv.TokenFile())
			}
			ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if err := srv.Serve(ctx); err != nil {
				return exitf(exitFailure, "inbox: %v", err)
			}
			return nil
		},
	}
}

// inboxWebhook reads --webhook and its settings (nil: none); the secret
// comes from a file only.
func inboxWebhook(c *cli.Command) (*approval.WebhookConfig, error) {
	urls := c.StringSlice("webhook")
	if len(urls) == 0 {
		for _, n := range []string{"webhook-secret", "webhook-identity", "webhook-listen", "webhook-answer-url"} {
			if c.IsSet(n) {
				return nil, exitf(exitUsage, "inbox: --%s: no --webhook URL to go with it", n)
			}
		}
		return nil, nil
	}
	if c.String("webhook-secret") == "" {
		return nil, exitf(exitUsage, "inbox: --webhook: needs --webhook-secret FILE (the shared HMAC secret)")
	}
	secret, err := approval.ReadWebhookSecret(c.String("webhook-secret"))
	if err != nil {
		return nil, exitf(exitUsage, "inbox: --webhook-secret: %v", err)
	}
	return &approval.WebhookConfig{URLs: urls, Secret: secret, Identity: c.String("webhook-identity"),
		Listen: c.String("webhook-listen"), AnswerBase: c.String("webhook-answer-url")}, nil
}
