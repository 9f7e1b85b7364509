package testenv

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// KeysHolding scans the keys of one Redis server matching match and lists
// every place that holds text: a key name ("key K"), or a hash field or
// value, set or sorted-set member, list element or string value ("K holds
// V"). Every key's name is looked at; only the contents of the webhook
// deliveries ({wh}:d:<id>, the delivery log) are passed over: they name
// members on purpose, until 7 days after each ends (R29, docs/operations.md,
// "Erasure"). For erasure tests.
func KeysHolding(ctx context.Context, c redis.Cmdable, match, text string) ([]string, error) {
	var found []string
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return found, err
		}
		for _, k := range keys {
			if strings.Contains(k, text) {
				found = append(found, "key "+k)
			}
			if strings.Contains(k, ":{wh}:d:") {
				continue
			}
			var vals []string
			switch typ, _ := c.Type(ctx, k).Result(); typ {
			case "hash":
				m, _ := c.HGetAll(ctx, k).Result()
				for f, v := range m {
					vals = append(vals, f, v)
				}
			case "set":
				vals, _ = c.SMembers(ctx, k).Result()
			case "zset":
				vals, _ = c.ZRange(ctx, k, 0, -1).Result()
			case "list":
				vals, _ = c.LRange(ctx, k, 0, -1).Result()
			case "string":
				v, _ := c.Get(ctx, k).Result()
				vals = []string{v}
			}
			for _, v := range vals {
				if strings.Contains(v, text) {
					found = append(found, k+" holds "+v)
				}
			}
		}
		if next == 0 {
			return found, nil
		}
		cursor = next
	}
}
