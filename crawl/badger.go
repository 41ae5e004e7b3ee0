package crawl

import (
	"context"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// BadgerStore is the Store of a Badger data dir. Badger is local: the
// contexts are checked before a call and not otherwise waited on.
func BadgerStore(db *storage.DB) Store { return badgerStore{db: db} }

// badgerStore is a Badger store; seen, when set, is the seen filter of the
// engine that owns the store (New; seenfilter.go).
type badgerStore struct {
	db   *storage.DB
	seen *seenFilter
}

func (b badgerStore) Update(ctx context.Context, fn func(Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.db.Update(func(tx *storage.Tx) error {
		if b.seen != nil {
			return fn(filteredTx{tx, b.seen})
		}
		return fn(tx)
	})
}

func (b badgerStore) GetMeta(_ context.Context, name string) ([]byte, error) {
	return b.db.GetMeta(name)
}

func (b badgerStore) PutMeta(_ context.Context, name string, v []byte) error {
	return b.db.PutMeta(name, v)
}

func (b badgerStore) Page(_ context.Context, id uint64) (*storage.Page, error) { return b.db.Page(id) }
func (b badgerStore) Text(_ context.Context, id uint64) (string, error)        { return b.db.Text(id) }

func (b badgerStore) ForEachPage(ctx context.Context, fn func(*storage.Page) error) error {
	return b.db.ForEachPage(func(p *storage.Page) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(p)
	})
}

func (b badgerStore) ForEachSkipped(ctx context.Context, fn func(*storage.Page) error) error {
	return b.db.ForEachSkipped(func(p *storage.Page) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(p)
	})
}

func (b badgerStore) ForEachSkippedUnder(ctx context.Context, prefix string, fn func(*storage.Page) error) error {
	return b.db.ForEachSkippedUnder(prefix, func(p *storage.Page) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(p)
	})
}

func (b badgerStore) ForEachSignature(ctx context.Context, fn func(id uint64, sig []byte) error) error {
	return b.db.ForEachSignature(func(id uint64, sig []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(id, sig)
	})
}

func (b badgerStore) ForEachEvidence(ctx context.Context, kind string, fn func(key string, v []byte) error) error {
	return b.db.ForEachEvidence(kind, func(key string, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(key, v)
	})
}

// LocalIndex is the DuplicateIndex of one process: the dedup detector's
// in-memory index (rebuilt from the stored signatures on resume).
func LocalIndex(d Detector) DuplicateIndex { return localIndex{d} }

type localIndex struct{ d Detector }

func (l localIndex) CheckAndAdd(_ context.Context, id uint64, sig *dedup.Signature, settle dedup.Settler) (dedup.Decision, error) {
	return l.d.CheckAndAddSettled(id, sig, settle), nil
}

func (l localIndex) Add(_ context.Context, id uint64, sig *dedup.Signature) error {
	l.d.Add(id, sig)
	return nil
}
