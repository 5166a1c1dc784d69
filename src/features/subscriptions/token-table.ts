// A second key to the subscription index: sub token (16 bytes) → user id (16 bytes), open addressing
// in typed arrays like the record table (nothing per entry on the JS heap). It maps to the user id,
// not to the record's address, so compaction never touches it; the record holds its token too, and a
// lookup is answered only when the two agree, so an entry left behind by a rotation cannot reach the
// user's new record.
const INITIAL_SLOTS = 64;
const MAX_LOAD = 0.7;

function hashOf(w: Uint32Array, at: number): number {
  return (
    Math.imul(
      (w[at] as number) ^
        Math.imul(w[at + 1] as number, 0x85ebca6b) ^
        Math.imul(w[at + 2] as number, 0xc2b2ae35) ^
        (w[at + 3] as number),
      0x9e3779b1,
    ) >>> 0
  );
}

const probe = new Uint32Array(4);
const probeBytes = new Uint8Array(probe.buffer);

export class TokenTable {
  #tokens = new Uint32Array(4 * INITIAL_SLOTS);
  #users = new Uint32Array(4 * INITIAL_SLOTS);
  #used = new Uint8Array(INITIAL_SLOTS);
  #count = 0;

  get bytes(): number {
    return this.#used.length * 33;
  }

  get entries(): number {
    return this.#count;
  }

  /** The user id (16 bytes) for this token, written into `user`; false when the token is unknown. */
  get(token: Uint8Array, user: Uint8Array): boolean {
    probeBytes.set(token);
    const slot = this.#find();
    if (slot < 0) return false;
    user.set(new Uint8Array(this.#users.buffer, 16 * slot, 16));
    return true;
  }

  set(token: Uint8Array, user: Uint8Array): void {
    probeBytes.set(token);
    let slot = this.#find();
    if (slot < 0) {
      if (this.#count + 1 > this.#used.length * MAX_LOAD) this.#grow();
      probeBytes.set(token);
      slot = this.#home();
      while (this.#used[slot] === 1) slot = (slot + 1) & (this.#used.length - 1);
      this.#used[slot] = 1;
      this.#tokens.set(probe, 4 * slot);
      this.#count++;
    }
    new Uint8Array(this.#users.buffer, 16 * slot, 16).set(user);
  }

  delete(token: Uint8Array): void {
    probeBytes.set(token);
    const slot = this.#find();
    if (slot < 0) return;
    const mask = this.#used.length - 1;
    let hole = slot;
    for (let j = (slot + 1) & mask; this.#used[j] === 1; j = (j + 1) & mask) {
      const home = hashOf(this.#tokens, 4 * j) & mask;
      const between = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (between) continue;
      this.#tokens.copyWithin(4 * hole, 4 * j, 4 * j + 4);
      this.#users.copyWithin(4 * hole, 4 * j, 4 * j + 4);
      hole = j;
    }
    this.#used[hole] = 0;
    this.#count--;
  }

  clear(): void {
    this.#tokens = new Uint32Array(4 * INITIAL_SLOTS);
    this.#users = new Uint32Array(4 * INITIAL_SLOTS);
    this.#used = new Uint8Array(INITIAL_SLOTS);
    this.#count = 0;
  }

  #home(): number {
    return hashOf(probe, 0) & (this.#used.length - 1);
  }

  /** The slot holding the token in `probe`, or -1. */
  #find(): number {
    const mask = this.#used.length - 1;
    const t = this.#tokens;
    for (let i = this.#home(); this.#used[i] === 1; i = (i + 1) & mask) {
      const at = 4 * i;
      if (t[at] === probe[0] && t[at + 1] === probe[1] && t[at + 2] === probe[2] && t[at + 3] === probe[3])
        return i;
    }
    return -1;
  }

  #grow(): void {
    const [tokens, users, used] = [this.#tokens, this.#users, this.#used];
    this.#tokens = new Uint32Array(tokens.length * 2);
    this.#users = new Uint32Array(users.length * 2);
    this.#used = new Uint8Array(used.length * 2);
    this.#count = 0;
    for (let i = 0; i < used.length; i++) {
      if (used[i] !== 1) continue;
      probe.set(tokens.subarray(4 * i, 4 * i + 4));
      let slot = this.#home();
      while (this.#used[slot] === 1) slot = (slot + 1) & (this.#used.length - 1);
      this.#used[slot] = 1;
      this.#tokens.set(probe, 4 * slot);
      this.#users.set(users.subarray(4 * i, 4 * i + 4), 4 * slot);
      this.#count++;
    }
  }
}
