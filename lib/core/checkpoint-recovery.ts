/**
 * What was done, before a warehouse file was opened, with the copy a process made before it checkpointed the file
 * and left when it died: `restored` when the checkpoint had not finished (the copy replaced the file, which
 * DuckDB's log completes), `discarded` when it had.
 */
export type CheckpointRecovery = 'restored' | 'discarded'
