/*
 * serve.h - the entry of `sandbox-agent serve` (README "sandbox-agent serve").
 */
#ifndef SA_SERVE_SERVE_H
#define SA_SERVE_SERVE_H

int serve_main(int argc, char **argv);

#endif
