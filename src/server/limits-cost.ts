// How much an evidence report or a verdict costs is known only while executing: how many souls a list holds, how many
// shards a report reads and whether their partition is held. So each one is charged, by the price list, as it
// resolves, against the limit the estimate was checked against.
import { GraphQLError } from 'graphql';

/** Per operation (and per subscription event): the estimate it started from and what its metered fields have cost since. */
export class CostMeter {
  private spent = 0;
  private estimate = 0;
  private limit: number;
  private setting = 'maxCost';

  constructor(maxCost: number) {
    this.limit = maxCost;
  }

  /** The operation's estimate before it ran, without its metered fields, and the limit it was checked against. */
  begin(estimate: number, limit: number, setting: string): void {
    this.estimate = estimate;
    this.limit = limit;
    this.setting = setting;
  }

  /** Charges work about to be done; refuses it with COST_LIMIT_EXCEEDED when the operation would pass its limit. */
  charge(units: number, what: string): void {
    const cost = Math.ceil(this.estimate + this.spent + units);
    if (cost > this.limit) {
      throw new GraphQLError(
        `Query cost limit of ${this.limit} exceeded (${this.setting}): ${what} costs ${Math.ceil(units)}, and this operation has used ${Math.ceil(this.estimate + this.spent)}`,
        { extensions: { code: 'COST_LIMIT_EXCEEDED', cost, limit: this.limit, setting: this.setting } },
      );
    }
    this.spent += units;
  }

  /** What the operation has cost so far: its estimate and every charge. */
  total(): number {
    return Math.ceil(this.estimate + this.spent);
  }

  /** A subscription event is a new execution: its fields are charged afresh. */
  reset(): void {
    this.spent = 0;
  }
}
