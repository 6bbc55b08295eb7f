import type { Argv } from 'yargs';
import type { SyncConfig } from '../../config.js';
import { SCHEMA_CONTRACTS, type SchemaContract } from '../../contracts.js';

/**
 * `--schema-contract` of sync, backfill and ingest: what this run does with fields the model does not map,
 * in place of the config's `schemaContract` (docs/configuration.md, "Fields the model does not map").
 */

export interface SchemaContractArgs {
  'schema-contract'?: SchemaContract;
}

export function withSchemaContractOption<T>(yargs: Argv<T>): Argv<T & SchemaContractArgs> {
  return yargs.option('schema-contract', {
    type: 'string',
    choices: SCHEMA_CONTRACTS,
    description:
      "Fields the model does not map, for this run (default: each stream's schemaContract in the config, else evolve): evolve keeps them in the row's _extra, freeze rejects the records that carry any, discard drops them; all three name them in _schema_changes",
  }) as Argv<T & SchemaContractArgs>;
}

/**
 * The config with `--schema-contract` in force for every stream and for ingested documents (a sync's
 * drained spool included), when it was given.
 */
export function withSchemaContract(config: SyncConfig, args: SchemaContractArgs): SyncConfig {
  const contract = args['schema-contract'];
  if (contract === undefined) return config;
  return {
    ...config,
    stores: config.stores.map((store) => ({
      ...store,
      streams: Object.fromEntries(
        Object.entries(store.streams).map(([name, options]) => [
          name,
          { ...options, schemaContract: contract },
        ]),
      ) as typeof store.streams,
      documents: { ...store.documents, schemaContract: contract },
    })),
  };
}
