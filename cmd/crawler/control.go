package main

import (
	"errors"
	"os"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/live"
	"github.com/horseshoe-crawler/horseshoe/session"
)

// serveToken is the report server's token: HORSESHOE_TOKEN, else serve.token.
func serveToken(cfg configs.Config) string {
	if t := os.Getenv("HORSESHOE_TOKEN"); t != "" {
		return t
	}
	return string(cfg.Serve.Token)
}

// controls are the control API's actions on crawl c of session sess; stop
// stops it as the first interrupt does. A worker of a shared crawl (no local
// frontier) offers status and stop only.
func controls(c *crawl.Crawl, sess *session.Session, stop func()) *live.Controls {
	if c.Frontier == nil {
		return &live.Controls{Stop: stop}
	}
	return &live.Controls{
		AddSeeds: func(urls []string) ([]string, int, error) {
			seeds, added, err := sess.AddSeeds(urls)
			var ue *session.UsageError
			var se *crawl.SeedError
			if errors.As(err, &ue) || errors.As(err, &se) {
				err = &live.RequestError{Err: err}
			}
			return seeds, added, err
		},
		Pause:  c.Frontier.Pause,
		Resume: c.Frontier.Resume,
		Stop:   stop,
	}
}
