/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.cli;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.gdrkit.ibverbs.IbvLibrary;
import io.gdrkit.labs.provider.NativeReadiness;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Child-JVM main for {@link NativeGpuMrTest}: with -Dgdrkit.ibverbs.library pointing at the stub libibverbs and
 * -Dgdrkit.cuda.library at the fake libcuda (test doubles, neither a NIC nor a GPU), runs the GPU registration
 * step of {@code --provider native} and prints, as one JSON object, what the lab reported and what the stub
 * recorded of the ibv_reg_dmabuf_mr and ibv_reg_mr calls it received.
 */
public final class NativeGpuMrProbe {
    private NativeGpuMrProbe() {
    }

    public static void main(final String[] args) throws Throwable {
        final Map<String, Object> out = new LinkedHashMap<>();
        final NativeReadiness.Result r = NativeReadiness.check("probe", "cuda:0");
        out.put("device", r.device());
        out.put("path", r.registration().path().name());
        out.put("evidence", r.registration().evidence());
        out.put("fallbackReason", r.registration().fallbackReason());
        out.put("mrAddress", r.registration().mr().address());
        final SymbolLookup stub = SymbolLookup.libraryLookup(Path.of(System.getProperty(IbvLibrary.LIBRARY_PROPERTY)),
            Arena.global());
        final Linker l = Linker.nativeLinker();
        try (Arena a = Arena.ofConfined()) {
            final MemorySegment dma = a.allocate(JAVA_LONG, 5);
            l.downcallHandle(stub.find("stub_last_dmabuf").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS))
                .invokeExact(dma);
            final MemorySegment reg = a.allocate(JAVA_LONG, 3);
            l.downcallHandle(stub.find("stub_last_reg_mr").orElseThrow(), FunctionDescriptor.ofVoid(ADDRESS))
                .invokeExact(reg);
            out.put("dmabufCalls", (int) l.downcallHandle(stub.find("stub_dmabuf_calls").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT)).invokeExact());
            out.put("regMrCalls", (int) l.downcallHandle(stub.find("stub_reg_mr_calls").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT)).invokeExact());
            out.put("dmabufOffset", dma.getAtIndex(JAVA_LONG, 0));
            out.put("dmabufLength", dma.getAtIndex(JAVA_LONG, 1));
            out.put("dmabufIova", dma.getAtIndex(JAVA_LONG, 2));
            out.put("dmabufFd", (int) dma.getAtIndex(JAVA_LONG, 3));
            out.put("dmabufAccess", (int) dma.getAtIndex(JAVA_LONG, 4));
            out.put("regMrAddr", reg.getAtIndex(JAVA_LONG, 0));
            out.put("regMrLength", reg.getAtIndex(JAVA_LONG, 1));
            out.put("regMrAccess", (int) reg.getAtIndex(JAVA_LONG, 2));
        }
        System.out.println(new ObjectMapper().writeValueAsString(out));
    }
}
