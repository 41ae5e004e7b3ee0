package crawl

import (
	"encoding/json"
	"fmt"

	"github.com/horseshoe-crawler/horseshoe/fetch"
)

// RobotsBytes is the storage side of robots.txt persistence: opaque entries
// per scheme+host key (storage.DB implements it).
type RobotsBytes interface {
	GetRobots(host string) ([]byte, bool, error)
	PutRobots(host string, entry []byte) error
}

// RobotsStore adapts a store of opaque entries to fetch.RobotsStore, so that
// the robots.txt cache survives a restart without storage/ importing fetch/.
type RobotsStore struct{ DB RobotsBytes }

var _ fetch.RobotsStore = RobotsStore{}

// LoadRobots implements fetch.RobotsStore.
func (r RobotsStore) LoadRobots(host string) (fetch.RobotsEntry, bool, error) {
	var e fetch.RobotsEntry
	b, ok, err := r.DB.GetRobots(host)
	if err != nil || !ok {
		return e, false, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, false, fmt.Errorf("robots.txt entry of %s: %w", host, err)
	}
	return e, true, nil
}

// SaveRobots implements fetch.RobotsStore.
func (r RobotsStore) SaveRobots(host string, e fetch.RobotsEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return r.DB.PutRobots(host, b)
}
