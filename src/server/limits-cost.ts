// Resolving an evidence report or a crystallization verdict costs far more than the static
// estimate of a field, and how many a list holds is known only while executing. So each one is
// charged as it resolves, against the same maxCost the estimate was checked against.
import { GraphQLError } from 'graphql';

/** What one resolution adds to a query's cost: an evidence report (per soul, per alias), a crystallization verdict (per soul). */
export const expensiveFieldCosts = { evidence: 2_500, crystallization: 10 } as const;

/** Per operation (and per subscription event): what its expensive fields have cost so far. */
export class CostMeter {
  private spent = 0;
  /** The operation's cost as estimated before it ran (boundingCost, with its variables). */
  private estimate = 0;
  private readonly maxCost: number;

  constructor(maxCost: number) {
    this.maxCost = maxCost;
  }

  /** Charges one resolution of `field`; refuses it with COST_LIMIT_EXCEEDED once the operation would pass maxCost. */
  estimated(cost: number): void {
    this.estimate = cost;
  }

  charge(field: keyof typeof expensiveFieldCosts): void {
    const cost = expensiveFieldCosts[field];
    const estimate = this.estimate;
    if (estimate + this.spent + cost > this.maxCost) {
      throw new GraphQLError(
        `Query cost limit of ${this.maxCost} exceeded: each ${field} costs ${cost}, and this operation has used ${Math.round(estimate + this.spent)}`,
        { extensions: { code: 'COST_LIMIT_EXCEEDED' } },
      );
    }
    this.spent += cost;
  }

  /** A subscription event is a new execution: its fields are charged afresh. */
  reset(): void {
    this.spent = 0;
  }
}
