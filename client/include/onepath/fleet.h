/*
 * A fleet of onepathd members: each level lives on the one member that rendezvous
 * (highest-random-weight) hashing of its name picks, by the rule of
 * docs/spec/protocol.md §11, so every client computes the same placement and adding a
 * member moves only the levels that now hash to it.
 */
#ifndef ONEPATH_FLEET_H
#define ONEPATH_FLEET_H

#include <stdint.h>

#include "onepath/client.h"

/* Most members a fleet takes. */
#define OP_FLEET_MAX_MEMBERS 1024

/* The weight of (member, level): SplitMix64's finaliser of 64-bit FNV-1a over the
 * member's bytes, one 0 byte, the level's bytes (protocol.md §11.1). */
uint64_t op_fleet_weight(const char *member, const char *level);

/* Index of the member that holds level: the highest weight, a tie going to the member
 * that sorts first bytewise. -1 when n is 0. */
int op_fleet_pick(const char *const *members, int n, const char *level);

typedef struct op_fleet op_fleet;

/* Opens the client of one member, as op_client_open does, except that every error its
 * calls return names the member: a daemon's error reply and a malformed reply as
 * "URL: message", transport errors (a member that does not answer) as they always do. With
 * several members, the error says which one failed. Close with op_client_close. */
op_status op_fleet_member_open(const char *url, op_client **out, op_err *err);

/* Opens one client per member (n >= 1, no member twice, each a valid URL), each as
 * op_fleet_member_open does. Free with op_fleet_close. */
op_status op_fleet_open(const char *const *members, int n, op_fleet **out, op_err *err);
void op_fleet_close(op_fleet *f);

/* op_client_set_token on every member's client (one token for the whole fleet). */
op_status op_fleet_set_token(op_fleet *f, const char *token, size_t len, op_err *err);

int op_fleet_size(const op_fleet *f);
const char *op_fleet_member(const op_fleet *f, int i);
op_client *op_fleet_client(const op_fleet *f, int i);
/* The index of the member that holds level. */
int op_fleet_index(const op_fleet *f, const char *level);
/* The client of the member that holds level (the member's URL in *member if not NULL). */
op_client *op_fleet_for(const op_fleet *f, const char *level, const char **member);

/* Reads a member list: spec is comma-separated URLs, or @FILE naming a file of URLs,
 * one a line (blank lines and lines starting with '#' skipped, spaces trimmed). The
 * URLs are appended to *members (realloc'd array of malloc'd strings, *n its length);
 * free with op_fleet_members_free. Empty entries and a list past
 * OP_FLEET_MAX_MEMBERS are OP_EINVAL naming them. */
op_status op_fleet_members_parse(const char *spec, char ***members, int *n, op_err *err);
void op_fleet_members_free(char **members, int n);

#endif
