// Package examples holds example clients of the gateway. The browser game
// in game/ is embedded here so that a gateway run with --dev serves it at
// /examples/game/ (see examples/README.md).
package examples

import "embed"

// Game is the browser game: index.html, game.js, game.css.
//
//go:embed game/index.html game/game.js game/game.css
var Game embed.FS
