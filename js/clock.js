// The Date of a deterministic run (Determinism.Clock): in front of the
// engine's, reading the run's virtual clock through now (bridge_clock.c).
(function (now) {
'use strict';
const D = Date, construct = Reflect.construct, define = Object.defineProperty;
const F = function Date(...args) {
	if (new.target === undefined) return construct(D, [now()], F).toString();
	return construct(D, args.length === 0 ? [now()] : args, new.target);
};
const method = (value) => ({value, writable: true, configurable: true});
define(F, 'prototype', {value: D.prototype});
define(F, 'length', {value: 7, configurable: true});
define(F, 'now', method(function now() { return now_(); }));
const now_ = now;
define(F, 'parse', method(D.parse));
define(F, 'UTC', method(D.UTC));
define(D.prototype, 'constructor', method(F));
define(globalThis, 'Date', method(F));
})
