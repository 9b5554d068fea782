// densim peer benchmark: runs one of OpenDC's CI experiments (CIBenchmark: the experiment JSON under
// src/jmh/resources/experiments/workloadScaling) through OpenDC's own experiment runner, as
// CIBenchmark.surfWeekBenchmark does (ExperimentCommand().main(...) = getScenarios + runExperiment,
// then the output folder is deleted), a given number of times in one JVM, and prints ONE JSON line
// with the time of each iteration split into setup (reading the experiment file) and run.
// The first iteration is the cold one; JMH's CI set-up (single-shot, 1 warm-up + 5 measured
// iterations) corresponds to --iterations 6 with the first dropped. The output of the LAST iteration is
// kept (moved to --keep-output) so that the caller can read OpenDC's own exported results.
//
//   java -cp ... densim.peers.opendc.CiRunKt --experiment PATH [--iterations N] [--keep-output DIR]
// Run it from the folder the experiment's relative paths start from (OpenDC's module folder in CI).
package densim.peers.opendc

import org.opendc.experiments.base.experiment.getScenarios
import org.opendc.experiments.base.runner.runExperiment
import java.io.File
import java.io.PrintStream
import java.lang.management.ManagementFactory
import kotlin.system.exitProcess

private fun usage(msg: String): Nothing {
    System.err.println("CiRun: $msg")
    System.err.println("usage: CiRun --experiment PATH [--iterations N] [--keep-output DIR]")
    exitProcess(2)
}

fun main(args: Array<String>) {
    var experiment: File? = null
    var iterations = 1
    var keep: File? = null
    var i = 0
    while (i < args.size) {
        val value = args.getOrNull(i + 1) ?: usage("${args[i]} needs a value")
        when (args[i]) {
            "--experiment" -> experiment = File(value)
            "--iterations" -> iterations = value.toIntOrNull()?.takeIf { it >= 1 } ?: usage("--iterations must be an integer >= 1, got '$value'")
            "--keep-output" -> keep = File(value)
            else -> usage("unknown option ${args[i]}")
        }
        i += 2
    }
    val exp = experiment ?: usage("--experiment is required")
    if (!exp.isFile) usage("experiment file not found: $exp")

    // OpenDC prints a banner and a progress bar per run to stdout; our one JSON line must stay parseable.
    val out = System.out
    System.setOut(PrintStream(System.err, true))

    val jvmStartMs = ManagementFactory.getRuntimeMXBean().startTime
    val mainStartMs = System.currentTimeMillis()
    val setup = ArrayList<Double>()
    val run = ArrayList<Double>()
    var outputFolder = ""
    for (it in 0 until iterations) {
        val t0 = System.nanoTime()
        val scenarios = getScenarios(exp, false)
        val t1 = System.nanoTime()
        runExperiment(scenarios, false)
        val t2 = System.nanoTime()
        setup.add((t1 - t0) / 1e9)
        run.add((t2 - t1) / 1e9)
        // The scenario's output folder is <outputFolder>/<experiment name>; its parent is what CI deletes.
        val root = File(scenarios[0].outputFolder).parentFile ?: File(scenarios[0].outputFolder)
        if (it == iterations - 1 && keep != null) {
            keep.deleteRecursively()
            keep.parentFile?.mkdirs()
            if (!root.renameTo(keep)) {
                root.copyRecursively(keep, overwrite = true)
                root.deleteRecursively()
            }
            outputFolder = File(keep, File(scenarios[0].outputFolder).name).path
        } else {
            root.deleteRecursively()
        }
    }
    val fmt = { xs: List<Double> -> xs.joinToString(",", "[", "]") { "%.4f".format(it) } }
    out.println(
        "{\"iterations\": $iterations, \"setup_s\": ${fmt(setup)}, \"run_s\": ${fmt(run)}, " +
            "\"jvm_start_to_main_s\": ${"%.4f".format((mainStartMs - jvmStartMs) / 1e3)}, " +
            "\"output_folder\": \"${outputFolder.replace("\\", "\\\\").replace("\"", "\\\"")}\", " +
            "\"java\": \"${System.getProperty("java.version")}\"}",
    )
    out.flush()
}
