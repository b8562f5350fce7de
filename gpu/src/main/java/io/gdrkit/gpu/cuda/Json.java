package io.gdrkit.gpu.cuda;

import java.util.Map;

/** A minimal JSON writer (the report must run on java.base alone). Values: String, Number, Boolean, Map, null. */
final class Json {
    private Json() {
    }

    static String write(final Object value) {
        final StringBuilder sb = new StringBuilder();
        write(sb, value, 0);
        return sb.append('\n').toString();
    }

    private static void write(final StringBuilder sb, final Object v, final int indent) {
        switch (v) {
            case null -> sb.append("null");
            case String s -> quote(sb, s);
            case Double dv when dv.isNaN() || dv.isInfinite() -> sb.append("null");
            case Float fv when fv.isNaN() || fv.isInfinite() -> sb.append("null");
            case Number n -> sb.append(n);
            case Boolean b -> sb.append(b);
            case Map<?, ?> m -> {
                sb.append("{");
                boolean first = true;
                for (final Map.Entry<?, ?> e : m.entrySet()) {
                    sb.append(first ? "\n" : ",\n").append("  ".repeat(indent + 1));
                    first = false;
                    quote(sb, String.valueOf(e.getKey()));
                    sb.append(": ");
                    write(sb, e.getValue(), indent + 1);
                }
                sb.append(first ? "}" : "\n" + "  ".repeat(indent) + "}");
            }
            case Iterable<?> it -> {
                sb.append("[");
                boolean first = true;
                for (final Object o : it) {
                    sb.append(first ? "" : ", ");
                    first = false;
                    write(sb, o, indent + 1);
                }
                sb.append("]");
            }
            default -> quote(sb, v.toString());
        }
    }

    private static void quote(final StringBuilder sb, final String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
