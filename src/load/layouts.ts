import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * The physical column order of the warehouse tables. The Appender writes by position, and a table
 * upgraded by a migration has its new columns at the end, not where the registry lists them.
 */
export class Layouts {
  private constructor(private readonly byTable: Map<string, string[]>) {}

  static async read(connection: DuckDBConnection): Promise<Layouts> {
    const reader = await connection.runAndReadAll(
      `SELECT table_name, list(column_name ORDER BY column_index) FROM duckdb_columns()
       WHERE database_name = current_database() AND schema_name = 'main' GROUP BY table_name`,
    );
    const byTable = new Map<string, string[]>();
    for (const [table, columns] of reader.getRows()) {
      byTable.set(String(table), (columns as { items: unknown[] }).items.map(String));
    }
    return new Layouts(byTable);
  }

  columns(table: string): string[] {
    const columns = this.byTable.get(table);
    if (!columns) throw new Error(`table ${table} is missing from the warehouse`);
    return columns;
  }
}
