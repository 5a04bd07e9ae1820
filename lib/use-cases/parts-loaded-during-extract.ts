import type { BatchManifest, StagedColumn, StagedPart } from '../core/batch.ts'
import type { BatchWriter } from '../ports/staging-store.ts'
import type { PartLoad } from '../ports/warehouse.ts'

/** Told after each part is in the warehouse: how many parts and rows are loaded so far. */
export type PartLoadedListener = (loaded: { readonly parts: number; readonly rows: number }) => void

/** What the merge of the batch asks of the parts loaded during its extract. */
export interface PreloadedParts {
  /**
   * Makes the loaded parts the merge's stage when they are exactly the parts `manifest` lists (names, sizes,
   * checksums, rows) and nothing failed, returning the stage's columns; otherwise drops them and returns undefined
   * (the merge then loads the staged batch as it would without them).
   */
  stageFor(manifest: BatchManifest): Promise<StagedColumn[] | undefined>
}

/**
 * The embedded pipeline's overlap of extract and load: each part the extract stages is first loaded into the
 * warehouse (from its file, before the staging store takes it), while the extract goes on with the next. Nothing is
 * applied: the merge, which runs only after the manifest is written, uses what was loaded as its stage, and only
 * when it is the committed batch. A part that fails to load spoils the load, never the extract.
 */
export class PartsLoadedDuringExtract implements PreloadedParts {
  readonly #load: PartLoad
  readonly #onLoaded: PartLoadedListener
  readonly #parts: StagedPart[] = []
  /** The writer's hand-offs, in the order the source added the parts. */
  #handOffs: Promise<unknown> = Promise.resolve()
  #loadedParts = 0
  #loadedRows = 0
  #spoiled = false

  constructor(load: PartLoad, onLoaded: PartLoadedListener = () => undefined) {
    this.#load = load
    this.#onLoaded = onLoaded
  }

  /** `writer`, handing every part to the warehouse before the staging store. */
  watch(writer: BatchWriter): BatchWriter {
    return {
      table: writer.table,
      batchId: writer.batchId,
      scratchDir: writer.scratchDir,
      addPart: async (localPath, rows) => {
        const loaded = this.#loadPart(localPath, rows)
        // The store numbers parts in the order addPart is called: the source's order, whatever the loads take.
        const turn = this.#handOffs.then(() => loaded)
        this.#handOffs = turn
        await turn
        const part = await writer.addPart(localPath, rows)
        this.#parts.push(part)
        return part
      },
      commit: (manifest) => writer.commit(manifest),
      suspend: (state) => {
        // A later pass adds the rest of the batch, in another process: this load never holds all of it.
        this.#spoiled = true
        return writer.suspend(state)
      },
      abort: (options) => writer.abort(options),
    }
  }

  async stageFor(manifest: BatchManifest): Promise<StagedColumn[] | undefined> {
    await this.#handOffs
    if (!this.#spoiled && sameParts(this.#parts, manifest.parts)) {
      const stage = await this.#load.useAsStage().catch(() => undefined)
      if (stage !== undefined && stage.rows === manifest.rowCount) return stage.columns
    }
    await this.discard()
    return undefined
  }

  /** Drops what was loaded (the batch was merged, or its run failed). */
  async discard(): Promise<void> {
    this.#spoiled = true
    await this.#handOffs.catch(() => undefined)
    await this.#load.discard().catch(() => undefined)
  }

  /** Loads one part; a failure spoils the load and is not the extract's. */
  async #loadPart(localPath: string, rows: number): Promise<void> {
    if (this.#spoiled) return
    try {
      await this.#load.add(localPath)
    } catch {
      this.#spoiled = true
      return
    }
    this.#loadedParts++
    this.#loadedRows += rows
    this.#onLoaded({ parts: this.#loadedParts, rows: this.#loadedRows })
  }
}

function sameParts(loaded: readonly StagedPart[], listed: readonly StagedPart[]): boolean {
  if (loaded.length !== listed.length) return false
  const key = (p: StagedPart) => `${p.name} ${p.rows} ${p.bytes} ${p.sha256}`
  const a = loaded.map(key).sort()
  const b = listed.map(key).sort()
  return a.every((k, i) => k === b[i])
}
