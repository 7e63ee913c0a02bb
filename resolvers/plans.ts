import { LevelUpPlanError, type LevelUpPlan } from '../src/engine/index.ts';
import { asRowId } from '../src/engine/normalize.ts';

type PlanArgs = {
  newEssence: string;
  consolidations: ReadonlyArray<{ sourceTraitIds: readonly (string | number)[]; mergedPrinciple: string; mergedProvenance: string }>;
  promotedTraitIds: readonly (string | number)[];
  carriedTraitIds: readonly (string | number)[];
};

/** The plan with row ids, or a LevelUpPlanError naming every id that cannot be a trait's. */
export function levelUpPlan(plan: PlanArgs): LevelUpPlan | LevelUpPlanError {
  const problems: { field: string; message: string }[] = [];
  const ids = (field: string, values: readonly (string | number)[]) =>
    values.map((value, i) => {
      const id = asRowId(value);
      if (typeof id === 'number' && Number.isSafeInteger(id) && id > 0) return id;
      problems.push({ field: `plan.${field}[${i}]`, message: `${JSON.stringify(value)} is not a trait id` });
      return 0;
    });
  const result: LevelUpPlan = {
    newEssence: plan.newEssence,
    consolidations: plan.consolidations.map((c, i) => ({ ...c, sourceTraitIds: ids(`consolidations[${i}].sourceTraitIds`, c.sourceTraitIds) })),
    promotedTraitIds: ids('promotedTraitIds', plan.promotedTraitIds),
    carriedTraitIds: ids('carriedTraitIds', plan.carriedTraitIds),
  };
  return problems.length > 0 ? new LevelUpPlanError({ missing: [], duplicated: [], notActive: [], problems }) : result;
}

/** The engine names plan problems relative to the plan; the API names them under the argument, as for ids: plan.newEssence. */
export function underPlan(error: LevelUpPlanError): LevelUpPlanError {
  const problems = error.problems.map((p) => ({ field: `plan.${p.field}`, message: p.message }));
  return new LevelUpPlanError({ missing: error.missing, duplicated: error.duplicated, notActive: error.notActive, problems });
}
